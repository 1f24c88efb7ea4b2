#pragma once
// An attention layer's inputs from the fused q/k/v projection: the q and k heads RMS-normalized
// (Qwen3's q_norm / k_norm; optional) and rotated (RoPE), k and v stored in the paged cache. It
// composes the reference kernels of norm.hpp, rope.hpp and kv_cache.hpp, step by step in fp32:
// the oracle for the fused GPU kernel.
#include <cstdint>

#include <minivllm/dtype.hpp>

#include "kernels/cpu/kv_cache.hpp"

namespace minivllm::cpu {

struct AttentionInputs {
  const float* qkv = nullptr;  // [num_tokens, num_heads + 2 * num_kv_heads, head_dim]: q, k, v
  const std::int32_t* positions = nullptr;     // [num_tokens]
  const std::int64_t* slot_mapping = nullptr;  // [num_tokens]; negative: padding, not stored
  const float* inv_freq = nullptr;             // [head_dim / 2]
  // [head_dim] each, in norm_dtype, or null for no norm (Llama).
  const void* q_norm_weight = nullptr;
  const void* k_norm_weight = nullptr;
  DType norm_dtype = DType::f32;
  float norm_eps = 1e-6f;
  std::int64_t num_tokens = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  float* q = nullptr;            // out [num_tokens, num_heads, head_dim]
  CacheRows key_cache;    // [num_slots, num_kv_heads, head_dim]: f32, or e4m3 and scales
  CacheRows value_cache;
  std::int64_t num_slots = 0;
};

// Throws std::out_of_range for a slot >= num_slots (as write_kv does).
void attention_inputs(const AttentionInputs& args);

}  // namespace minivllm::cpu
