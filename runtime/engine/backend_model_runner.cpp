#include "engine/backend_model_runner.hpp"

#include <minivllm/error.hpp>

namespace minivllm {

std::span<const float> BackendModelRunner::execute(const Batch& batch) {
  const Tensor logits = model_.forward(batch, kv_);
  const auto rows = static_cast<std::int64_t>(batch.logits_rows.size());
  if (logits.dtype() != DType::f32 || logits.rank() != 2 || logits.dim(0) != rows ||
      logits.dim(1) != vocab_size_)
    throw Error("model returned logits " + shape_string(logits.shape()) + ", expected f32 [" +
                std::to_string(rows) + ", " + std::to_string(vocab_size_) + "]");
  logits_.resize(static_cast<std::size_t>(logits.numel()));
  if (rows > 0) ops_.to_host(logits, logits_.data());
  return logits_;
}

}  // namespace minivllm
