#pragma once
// Rotary position embedding on the GPU, fused with Qwen3's per-head q/k RMSNorm.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

struct RotaryParams {
  DType dtype = DType::bf16;  // of q, k and the norm weights (bf16 or f32)
  void* q = nullptr;          // [num_tokens, num_heads, head_dim], in place
  void* k = nullptr;          // [num_tokens, num_kv_heads, head_dim], in place
  const std::int32_t* positions = nullptr;  // [num_tokens]
  // f32 [head_dim / 2], computed on the host: 1 / theta^(2i / head_dim), with Llama 3's rope
  // scaling already applied where the model has it.
  const float* inv_freq = nullptr;
  std::int64_t num_tokens = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;  // even, at most 128
  // Qwen3's q_norm / k_norm weights [head_dim], or null for no norm (Llama): each head is first
  // RMS-normalized with its weight, then rotated.
  const void* q_norm_weight = nullptr;
  const void* k_norm_weight = nullptr;
  float norm_eps = 1e-6f;
};

// Neox / rotate_half style as Hugging Face Llama and Qwen3 apply it: dimension i < head_dim / 2
// of a head pairs with i + head_dim / 2, rotated by angle positions[t] * inv_freq[i] (fp32). All
// pointers on the device. Math in fp32, one rounding to dtype at the end.
cudaError_t launch_rotary_embedding(const RotaryParams& params, cudaStream_t stream);

}  // namespace minivllm::cuda
