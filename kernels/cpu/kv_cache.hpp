#pragma once
// Writing new keys and values into a paged cache. A cache is [num_slots, num_kv_heads, head_dim]
// rows, one slot per token (num_slots = num_blocks * block_size): f32 values, or e4m3 codes with
// a scale per slot and head (fp8.hpp; the scales' layout: kernels/fp8_scales.hpp).
#include <cstdint>

namespace minivllm::cpu {

// One layer's keys or values.
struct CacheRows {
  void* data = nullptr;            // f32 values, or e4m3 codes when `scales` is set
  std::uint8_t* scales = nullptr;  // fp8: e8m0 [num_blocks, num_kv_heads, block_size]; null: f32
  std::int64_t block_size = 1;     // the cache's, for the scales' layout
};

// Row t of k and v [num_tokens, num_kv_heads * head_dim] goes to cache slot slot_mapping[t]
// (each head quantized on its own in an fp8 cache); a negative slot means "do not cache"
// (padding). Throws std::out_of_range for a slot >= num_slots.
void write_kv(const float* k, const float* v, const std::int64_t* slot_mapping,
              std::int64_t num_tokens, std::int64_t num_kv_heads, std::int64_t head_dim,
              CacheRows keys, CacheRows values, std::int64_t num_slots);

}  // namespace minivllm::cpu
