#pragma once
// The fp8 KV cache's scales (runtime/include/minivllm/kv_cache.hpp), identical on host and device:
// one byte per token and KV head, in e8m0 (the OCP MX scale format: a power of two by its biased
// exponent, 2^(e - 127)), laid out [num_blocks, num_kv_heads, block_size] so that a head's scales
// of consecutive tokens in a block are consecutive bytes (a 16-token tile's, one 16-byte piece).
#include <cstdint>

#include "kernels/bf16.hpp"

namespace minivllm {

// A power of two in [2^-126, 2^127] (what e4m3_head_scale gives) as e8m0: e in [1, 254].
MINIVLLM_HOST_DEVICE inline std::uint8_t e8m0_from_scale(float power_of_two) {
  return static_cast<std::uint8_t>(float_bits(power_of_two) >> 23 & 0xFFu);
}

// Exact for e in [1, 254].
MINIVLLM_HOST_DEVICE inline float e8m0_to_scale(std::uint8_t e) {
  return bits_float(std::uint32_t{e} << 23);
}

// Where the scale of head `kv_head` of the token at `offset` in cache block `block` is, in a cache
// of `block_size`-token blocks.
MINIVLLM_HOST_DEVICE inline std::int64_t fp8_scale_index(std::int64_t block, std::int64_t offset,
                                                         std::int64_t kv_head,
                                                         std::int64_t num_kv_heads,
                                                         std::int64_t block_size) {
  return (block * num_kv_heads + kv_head) * block_size + offset;
}

// The same by slot (block * block_size + offset): a division, which kernels that walk the block
// table avoid. The division is in the slot's type: the cache write, whose host bounds the slots,
// divides in 32 bits; any type gives the same index for the slots it holds.
template <class Slot>
MINIVLLM_HOST_DEVICE inline std::int64_t fp8_slot_scale_index(Slot slot, std::int64_t kv_head,
                                                              std::int64_t num_kv_heads,
                                                              std::int64_t block_size) {
  const auto slot_block_size = static_cast<Slot>(block_size);
  const Slot block = slot / slot_block_size;
  return fp8_scale_index(block, slot - block * slot_block_size, kv_head, num_kv_heads, block_size);
}

}  // namespace minivllm
