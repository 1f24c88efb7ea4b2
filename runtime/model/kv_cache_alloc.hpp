#pragma once
// Allocating the paged KV cache a model asks for (Model::kv_cache_spec) on a backend.
#include <cstdint>

#include <minivllm/kv_cache.hpp>
#include <minivllm/ops.hpp>

namespace minivllm {

// Per layer, keys and values of [num_blocks, block_size, num_kv_heads, head_dim], zeroed.
// The CPU backend computes in f32 and needs an f32 cache; CudaOps needs its compute dtype.
KvCacheView allocate_kv_cache(Ops& ops, const KvCacheSpec& spec, std::int64_t num_blocks,
                              std::int64_t block_size, DType dtype = DType::f32);

}  // namespace minivllm
