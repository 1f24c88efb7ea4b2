#pragma once
// The paged KV cache as a model sees it: per layer a key and a value tensor of
// [num_blocks, block_size, num_kv_heads, head_dim]; slot s is row s of the flattened first two
// dimensions. Blocks are handed out by the engine's block manager; the model only reads and writes
// through a Batch's block tables and slot mapping.
//
// A cache of dtype fp8_e4m3 (cache.kv_cache_dtype = "fp8_e4m3") stores each token's head as
// head_dim e4m3 codes and one scale: value = decode(code) * scale. The scale is the power of two
// 2^k with the smallest k for which the head's largest |x| divided by it is at most 448 (e4m3's
// largest finite value), k in [-126, 127], so it depends on that token's head alone (never on how
// a batch was cut) and dividing by it is exact. Codes are rounded to nearest even and saturate at
// +-448 (kernels/cpu/fp8.hpp). A scale is one byte, its float exponent k + 127 (e8m0, the OCP MX
// scale format). The scales sit in the same allocation as the codes, after them:
// kv_cache_scales_offset bytes from the tensor's data, [num_blocks, num_kv_heads, block_size], so
// a head's scales of one block's tokens are consecutive bytes; the tensor's nbytes() counts the
// codes only.
#include <cstdint>
#include <vector>

#include <minivllm/tensor.hpp>

namespace minivllm {

// What a model needs cached per token (num_kv_heads is this rank's share under tensor parallelism).
struct KvCacheSpec {
  std::int64_t num_layers = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
};

// Where an fp8_e4m3 cache tensor's scales start, in bytes from its data: past the codes of
// num_slots x num_kv_heads x head_dim, rounded up to 256 bytes.
constexpr std::int64_t kv_cache_scales_offset(std::int64_t num_slots, std::int64_t num_kv_heads,
                                              std::int64_t head_dim) {
  return (num_slots * num_kv_heads * head_dim + 255) / 256 * 256;
}
// The scales of an fp8_e4m3 cache tensor [num_blocks, block_size, num_kv_heads, head_dim].
inline std::uint8_t* kv_cache_scales(const Tensor& cache) {
  return static_cast<std::uint8_t*>(cache.data()) +
         kv_cache_scales_offset(cache.dim(0) * cache.dim(1), cache.dim(2), cache.dim(3));
}

struct KvCacheView {
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::vector<Tensor> keys;    // [num_layers]
  std::vector<Tensor> values;  // [num_layers]
};

}  // namespace minivllm
