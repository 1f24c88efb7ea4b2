#pragma once
// Writing new keys and values into the paged KV cache on the GPU. A cache is [num_slots, width]
// rows, one slot per token: [num_blocks, block_size, num_kv_heads, head_dim] flattened, slot =
// block * block_size + offset (runtime/include/minivllm/kv_cache.hpp).
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// Row t of k and v [num_tokens, width] goes to row slot_mapping[t] (int64) of key_cache and
// value_cache [num_slots, width]; all `dtype` (bf16 or f32) on the device. A negative slot means
// "do not cache" (padding); a slot >= num_slots is skipped too, never written past the cache (the
// caller checks slots on the host).
cudaError_t launch_write_kv(DType dtype, const void* k, const void* v,
                            const std::int64_t* slot_mapping, std::int64_t num_tokens,
                            std::int64_t width, void* key_cache, void* value_cache,
                            std::int64_t num_slots, cudaStream_t stream);

}  // namespace minivllm::cuda
