#pragma once
// Warp and block reductions in fp32. Included by .cu files only.
#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

inline constexpr unsigned kFullWarp = 0xFFFFFFFFu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

// op(v) over an aligned group of `width` lanes (a power of two, at most 32), returned to each of
// them. Only the group's lanes take part, so groups of one warp may diverge around the call.
template <class Op>
__device__ __forceinline__ float lane_group_reduce(float v, int width, Op op) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned mask =
      width == 32 ? kFullWarp : ((1u << width) - 1u) << (lane & ~static_cast<unsigned>(width - 1));
  for (int offset = width / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(mask, v, offset));
  return v;
}
__device__ __forceinline__ float lane_group_sum(float v, int width) {
  return lane_group_reduce(v, width, [](float a, float b) { return a + b; });
}
__device__ __forceinline__ float lane_group_max(float v, int width) {
  return lane_group_reduce(v, width, [](float a, float b) { return fmaxf(a, b); });
}

// Sum of v over the block, returned to every thread. blockDim.x must be a multiple of 32; call it
// at most once per kernel (it reuses its shared memory without a trailing barrier).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_totals[32];
  __shared__ float total;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_totals[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

}  // namespace minivllm::cuda::detail
