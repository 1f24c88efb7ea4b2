#pragma once
// What the step loop runs a batch on: a model with its KV cache on some backend.
#include <span>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/cpu_sampler.hpp"

namespace minivllm {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;
  // Runs one step. Returns f32 logits on the host, [batch.logits_rows.size(), vocab_size()]
  // row-major, valid until the next call.
  virtual std::span<const float> execute(const Batch& batch) = 0;
  // Runs one step and samples each logits row: rows[i] is logits row i (its `logits` span is
  // not read), so rows.size() must equal batch.logits_rows.size() (a step wanting prompt
  // logits calls execute() instead). This default brings the logits to the host (execute) for
  // the CPU sampler; a runner whose logits live on a device may sample them there.
  virtual std::vector<SampledToken> execute_and_sample(const Batch& batch,
                                                       std::span<const SamplerRow> rows);
};

}  // namespace minivllm
