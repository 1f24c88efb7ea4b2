#include "kernels/cpu/kv_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace minivllm::cpu {

void write_kv(const float* k, const float* v, const std::int64_t* slot_mapping,
              std::int64_t num_tokens, std::int64_t width, float* key_cache, float* value_cache,
              std::int64_t num_slots) {
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    const std::int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    if (slot >= num_slots)
      throw std::out_of_range("KV slot " + std::to_string(slot) + " past the cache's " +
                              std::to_string(num_slots) + " slots");
    std::copy_n(k + t * width, width, key_cache + slot * width);
    std::copy_n(v + t * width, width, value_cache + slot * width);
  }
}

}  // namespace minivllm::cpu
