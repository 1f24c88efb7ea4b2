#pragma once
// An attention layer's inputs on the GPU, in one kernel: from the fused q/k/v projection, Qwen3's
// per-head q/k RMSNorm, RoPE, and the new keys and values stored in the paged KV cache.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

struct AttentionInputsParams {
  DType dtype = DType::bf16;  // of qkv, q and the norm weights (bf16 or f32)
  // Of the caches: dtype, or fp8_e4m3 (codes, with a scale per slot and KV head in key_scales /
  // value_scales, e8m0 [num_blocks, num_kv_heads, block_size]: kernels/fp8_scales.hpp),
  // quantized from the fp32 results as kernels/cpu/fp8.hpp does, bit for bit.
  DType kv_dtype = DType::bf16;
  std::uint8_t* key_scales = nullptr;
  std::uint8_t* value_scales = nullptr;
  std::int64_t block_size = 1;  // the caches', for the scales' layout
  // [num_tokens, num_heads + 2 * num_kv_heads, head_dim]: a token's q heads, k heads, v heads.
  const void* qkv = nullptr;
  void* q = nullptr;  // out [num_tokens, num_heads, head_dim]
  // [num_slots, num_kv_heads, head_dim] each: [num_blocks, block_size, ...] flattened, slot =
  // block * block_size + offset (runtime/include/minivllm/kv_cache.hpp).
  void* key_cache = nullptr;
  void* value_cache = nullptr;
  // [num_tokens]: token t's keys and values go to slot_mapping[t]; a negative slot means "do not
  // cache" (padding) and a slot >= num_slots is skipped too (the caller checks slots on the host).
  const std::int64_t* slot_mapping = nullptr;
  // f32 [num_tokens, head_dim]: the cosines, then the sines, of token t's angles
  // (rotary_angles.cuh).
  const float* rotary = nullptr;
  std::int64_t num_tokens = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;  // even, at most 128
  std::int64_t num_slots = 0;
  // Qwen3's q_norm / k_norm weights [head_dim], or null for no norm (Llama): each q and k head is
  // first RMS-normalized with its weight, then rotated.
  const void* q_norm_weight = nullptr;
  const void* k_norm_weight = nullptr;
  float norm_eps = 1e-6f;
};

// RoPE neox / rotate_half style as Hugging Face Llama and Qwen3 apply it: dimension i <
// head_dim / 2 of a head pairs with i + head_dim / 2, rotated by token t's angle i (rotary). All
// pointers on the device. Math in fp32, one rounding to dtype at the end.
cudaError_t launch_attention_inputs(const AttentionInputsParams& params, cudaStream_t stream);

}  // namespace minivllm::cuda
