#include "engine/backend_model_runner.hpp"

#include <algorithm>
#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

Tensor BackendModelRunner::forward(const Batch& batch) {
  Tensor logits = steps_->run(batch);
  const auto rows = static_cast<std::int64_t>(batch.logits_rows.size());
  if (logits.dtype() != DType::f32 || logits.rank() != 2 || logits.dim(0) != rows ||
      logits.dim(1) != vocab_size_)
    throw Error("model returned logits " + shape_string(logits.shape()) + ", expected f32 [" +
                std::to_string(rows) + ", " + std::to_string(vocab_size_) + "]");
  return logits;
}

std::span<const float> BackendModelRunner::execute(const Batch& batch) {
  const Tensor logits = forward(batch);
  logits_.resize(static_cast<std::size_t>(logits.numel()));
  if (logits.numel() > 0) ops_.to_host(logits, logits_.data());
  return logits_;
}

std::vector<SampledToken> BackendModelRunner::execute_and_sample(
    const Batch& batch, std::span<const SamplerRow> rows) {
  if (!sampler_ || rows.size() != batch.logits_rows.size())
    return ModelRunner::execute_and_sample(batch, rows);  // (which rejects a size mismatch)
  return sampler_->sample(forward(batch), rows);
}

void BackendModelRunner::queue_step(const Batch& batch, std::span<const SamplerRow> rows,
                                    bool fed) {
  if (!can_queue(rows.size()) || rows.size() != batch.logits_rows.size())
    throw Error("queue_step: " + std::to_string(rows.size()) + " rows to sample for " +
                std::to_string(batch.logits_rows.size()) + " logits rows" +
                (sampler_ ? "" : ", and no device sampler"));
  // A fed step's ids name the rows the sampling ahead of it leaves on the device (the backend's
  // convention, e.g. cuda_step_runner.hpp): its step runner sees them in the batch.
  if (fed != std::any_of(batch.token_ids.begin(), batch.token_ids.end(),
                         [](std::int32_t id) { return id < 0; }))
    throw Error(std::string("queue_step: a ") + (fed ? "fed" : "step not fed") +
                (fed ? " step with no sampled-row ids" : " with sampled-row ids"));
  sampler_->queue(forward(batch), rows);
}

}  // namespace minivllm
