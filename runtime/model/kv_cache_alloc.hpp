#pragma once
// Allocating the paged KV cache a model asks for (Model::kv_cache_spec) on a backend.
#include <cstdint>
#include <string>

#include <minivllm/kv_cache.hpp>
#include <minivllm/model_config.hpp>
#include <minivllm/ops.hpp>

namespace minivllm {

// Per layer, keys and values of [num_blocks, block_size, num_kv_heads, head_dim], zeroed.
// The CPU backend computes in f32 and needs an f32 cache; CudaOps needs its compute dtype. Either
// takes fp8_e4m3 (codes and scales: kv_cache.hpp).
KvCacheView allocate_kv_cache(Ops& ops, const KvCacheSpec& spec, std::int64_t num_blocks,
                              std::int64_t block_size, DType dtype = DType::f32);

// Bytes one block takes over all layers: keys and values of block_size tokens.
std::int64_t kv_cache_bytes_per_block(const KvCacheSpec& spec, std::int64_t block_size, DType dtype);

// cache.num_blocks given by hand: throws minivllm::Error naming the key, the bytes its blocks
// need and how many blocks fit when they need more than `available_bytes` (`memory`: what that
// is, for the message), instead of failing in the allocator.
void check_kv_cache_fits(const KvCacheSpec& spec, std::int64_t block_size, DType dtype,
                         std::int64_t num_blocks, std::int64_t available_bytes,
                         const std::string& memory);

// Device memory kept back from the KV cache for one step's activations (cache.num_blocks = 0):
// max_num_batched_tokens rows of the model's widest activation (hidden, q+k+v, 2 x intermediate)
// in f32 (the widest dtype an op may use), times kActivationBuffers live tensors (residual,
// normed input, projections, attention output, MLP halves, the caching pool's slack), plus
// max_num_seqs rows of f32 logits twice (device output and its conversion). Generous on purpose:
// a step that runs out of memory mid-run is worse than a few fewer blocks.
inline constexpr std::int64_t kActivationBuffers = 8;
std::int64_t activation_reserve_bytes(const ModelConfig& model, std::int64_t max_num_batched_tokens,
                                      std::int64_t max_num_seqs);

// cache.num_blocks = 0 on a GPU: (free_bytes x gpu_memory_utilization - reserve_bytes) / bytes
// per block, taken after the weights are loaded. Throws minivllm::Error when that is fewer blocks
// than one max_model_len sequence needs.
std::int64_t kv_cache_blocks_for_memory(const KvCacheSpec& spec, std::int64_t block_size,
                                        DType dtype, std::int64_t free_bytes,
                                        double gpu_memory_utilization, std::int64_t reserve_bytes,
                                        std::int64_t max_model_len);

}  // namespace minivllm
