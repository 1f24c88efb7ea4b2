#include "kernels/cpu/attention_inputs.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cpu/kv_cache.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/rope.hpp"

namespace minivllm::cpu {

void attention_inputs(const AttentionInputs& a) {
  const std::int64_t q_width = a.num_heads * a.head_dim, kv_width = a.num_kv_heads * a.head_dim;
  const std::int64_t qkv_width = q_width + 2 * kv_width;
  std::vector<float> k(static_cast<std::size_t>(a.num_tokens * kv_width));
  std::vector<float> v(k.size());
  for (std::int64_t t = 0; t < a.num_tokens; ++t) {
    const float* row = a.qkv + t * qkv_width;
    std::copy_n(row, q_width, a.q + t * q_width);
    std::copy_n(row + q_width, kv_width, k.data() + t * kv_width);
    std::copy_n(row + q_width + kv_width, kv_width, v.data() + t * kv_width);
  }
  if (a.q_norm_weight != nullptr)
    rms_norm(a.q, a.q_norm_weight, a.norm_dtype, a.q, a.num_tokens * a.num_heads, a.head_dim,
             a.norm_eps);
  if (a.k_norm_weight != nullptr)
    rms_norm(k.data(), a.k_norm_weight, a.norm_dtype, k.data(), a.num_tokens * a.num_kv_heads,
             a.head_dim, a.norm_eps);
  rotary_embedding(a.q, a.positions, a.inv_freq, a.num_tokens, a.num_heads, a.head_dim);
  rotary_embedding(k.data(), a.positions, a.inv_freq, a.num_tokens, a.num_kv_heads, a.head_dim);
  write_kv(k.data(), v.data(), a.slot_mapping, a.num_tokens, a.num_kv_heads, a.head_dim,
           a.key_cache, a.value_cache, a.num_slots);
}

}  // namespace minivllm::cpu
