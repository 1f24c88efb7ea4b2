#pragma once
// Writing new keys and values into a paged cache. A cache is [num_slots, width] rows, one slot per
// token (num_slots = num_blocks * block_size, width = num_kv_heads * head_dim).
#include <cstdint>

namespace minivllm::cpu {

// Row t of k and v [num_tokens, width] goes to cache slot slot_mapping[t]; a negative slot means
// "do not cache" (padding). Throws std::out_of_range for a slot >= num_slots.
void write_kv(const float* k, const float* v, const std::int64_t* slot_mapping,
              std::int64_t num_tokens, std::int64_t width, float* key_cache, float* value_cache,
              std::int64_t num_slots);

}  // namespace minivllm::cpu
