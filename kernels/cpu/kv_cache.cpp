#include "kernels/cpu/kv_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/fp8.hpp"
#include "kernels/fp8_scales.hpp"

namespace minivllm::cpu {

namespace {

void write_row(const float* x, std::int64_t slot, std::int64_t num_kv_heads,
               std::int64_t head_dim, CacheRows cache) {
  const std::int64_t width = num_kv_heads * head_dim;
  if (cache.scales == nullptr) {
    std::copy_n(x, width, static_cast<float*>(cache.data) + slot * width);
    return;
  }
  auto* codes = static_cast<std::uint8_t*>(cache.data) + slot * width;
  for (std::int64_t h = 0; h < num_kv_heads; ++h)
    quantize_e4m3_head(x + h * head_dim, head_dim, codes + h * head_dim,
                       cache.scales + fp8_slot_scale_index(slot, h, num_kv_heads, cache.block_size));
}

}  // namespace

void write_kv(const float* k, const float* v, const std::int64_t* slot_mapping,
              std::int64_t num_tokens, std::int64_t num_kv_heads, std::int64_t head_dim,
              CacheRows keys, CacheRows values, std::int64_t num_slots) {
  const std::int64_t width = num_kv_heads * head_dim;
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    const std::int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    if (slot >= num_slots)
      throw std::out_of_range("KV slot " + std::to_string(slot) + " past the cache's " +
                              std::to_string(num_slots) + " slots");
    write_row(k + t * width, slot, num_kv_heads, head_dim, keys);
    write_row(v + t * width, slot, num_kv_heads, head_dim, values);
  }
}

}  // namespace minivllm::cpu
