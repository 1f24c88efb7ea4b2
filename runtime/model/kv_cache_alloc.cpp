#include "model/kv_cache_alloc.hpp"

#include <vector>

#include <minivllm/error.hpp>

namespace minivllm {

KvCacheView allocate_kv_cache(Ops& ops, const KvCacheSpec& spec, std::int64_t num_blocks,
                              std::int64_t block_size, DType dtype) {
  if (num_blocks < 1 || block_size < 1)
    throw Error("KV cache needs at least one block of at least one token");
  const Shape shape{num_blocks, block_size, spec.num_kv_heads, spec.head_dim};
  // Zeroed so that a read of a never-written slot (a bug) is deterministic.
  const std::vector<std::byte> zeros(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype));
  KvCacheView kv{num_blocks, block_size, {}, {}};
  for (std::int64_t l = 0; l < spec.num_layers; ++l) {
    kv.keys.push_back(ops.from_host(zeros.data(), dtype, shape));
    kv.values.push_back(ops.from_host(zeros.data(), dtype, shape));
  }
  return kv;
}

}  // namespace minivllm
