#pragma once
// The device side of L2Prefetch: each block of the grid (any shape) asks for its share, one bulk
// prefetch (TMA, sm_90) issued by the block's first thread; no registers or shared memory held,
// nothing waited on. Older GPUs compile it to nothing.
#include <cstdint>

#include "kernels/cuda/l2_prefetch.cuh"

namespace minivllm::cuda::detail {

__device__ __forceinline__ void prefetch_block_share(const L2Prefetch& prefetch) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0 || prefetch.bytes == 0) return;
  const std::size_t blocks = std::size_t{gridDim.x} * gridDim.y * gridDim.z;
  const std::size_t block =
      blockIdx.x + std::size_t{gridDim.x} * (blockIdx.y + std::size_t{gridDim.y} * blockIdx.z);
  const std::size_t per_block = (prefetch.bytes / 16 + blocks - 1) / blocks * 16;
  const std::size_t begin = block * per_block;
  if (begin >= prefetch.bytes) return;
  const std::size_t size = min(per_block, prefetch.bytes - begin);
  // The instruction takes a global-space address.
  const auto address = __cvta_generic_to_global(static_cast<const char*>(prefetch.data) + begin);
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(address),
               "r"(static_cast<std::uint32_t>(size))
               : "memory");
#endif
}

}  // namespace minivllm::cuda::detail
