#include "engine/model_runner.hpp"

#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

std::vector<SampledToken> ModelRunner::execute_and_sample(const Batch& batch,
                                                          std::span<const SamplerRow> rows) {
  if (rows.size() != batch.logits_rows.size())
    throw Error("execute_and_sample: " + std::to_string(rows.size()) + " rows to sample for " +
                std::to_string(batch.logits_rows.size()) + " logits rows");
  const std::span<const float> logits = execute(batch);
  const auto vocab = static_cast<std::size_t>(vocab_size());
  std::vector<SamplerRow> with_logits(rows.begin(), rows.end());
  for (std::size_t r = 0; r < with_logits.size(); ++r)
    with_logits[r].logits = logits.subspan(r * vocab, vocab);
  return sample_batch(with_logits);
}

void ModelRunner::queue_step(const Batch&, std::span<const SamplerRow>, bool) {
  throw Error("this model runner cannot queue steps");
}

bool ModelRunner::step_ready() { throw Error("this model runner cannot queue steps"); }

std::vector<SampledToken> ModelRunner::collect_step() {
  throw Error("this model runner cannot queue steps");
}

}  // namespace minivllm
