#pragma once
// What the step loop runs a batch on: a model with its KV cache on some backend.
#include <span>

#include <minivllm/batch.hpp>

namespace minivllm {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;
  // Runs one step. Returns f32 logits on the host, [batch.logits_rows.size(), vocab_size()]
  // row-major, valid until the next call.
  virtual std::span<const float> execute(const Batch& batch) = 0;
};

}  // namespace minivllm
