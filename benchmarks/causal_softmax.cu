// One block of 256 threads per row: max, sum of exponentials, then the normalized row, each a
// strided pass over the row (the naive baseline, not tuned).
#include "benchmarks/causal_softmax.cuh"

#include <cmath>

#include <cuda_bf16.h>

#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::bench {
namespace {

using cuda::detail::warp_max;
using cuda::detail::warp_sum;

constexpr int kThreads = 256;

// Every thread gets the reduction of v over the block; `combine` is warp_max or warp_sum and
// `identity` its neutral value.
template <class Combine>
__device__ float block_reduce(float v, float identity, float* partials, Combine combine) {
  v = combine(v);
  if (threadIdx.x % 32 == 0) partials[threadIdx.x / 32] = v;
  __syncthreads();
  v = combine(threadIdx.x % 32 < kThreads / 32 ? partials[threadIdx.x % 32] : identity);
  __syncthreads();  // partials is reused by the next reduction
  return v;
}

__global__ void __launch_bounds__(kThreads)
    causal_softmax_kernel(__nv_bfloat16* scores, std::int64_t row_len, float scale) {
  __shared__ float partials[kThreads / 32];
  __nv_bfloat16* row = scores + static_cast<std::int64_t>(blockIdx.x) * row_len;
  const std::int64_t keys = blockIdx.x % row_len + 1;
  float max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < keys; j += kThreads)
    max = fmaxf(max, __bfloat162float(row[j]) * scale);
  max = block_reduce(max, -INFINITY, partials, [](float x) { return warp_max(x); });
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < keys; j += kThreads)
    sum += expf(__bfloat162float(row[j]) * scale - max);
  sum = block_reduce(sum, 0.0f, partials, [](float x) { return warp_sum(x); });
  for (std::int64_t j = threadIdx.x; j < row_len; j += kThreads)
    row[j] = __float2bfloat16_rn(j < keys ? expf(__bfloat162float(row[j]) * scale - max) / sum
                                          : 0.0f);
}

}  // namespace

cudaError_t launch_causal_softmax(void* scores, std::int64_t num_rows, std::int64_t row_len,
                                  float scale, cudaStream_t stream) {
  if (num_rows <= 0 || row_len <= 0 || num_rows > 0x7FFFFFFF) return cudaErrorInvalidValue;
  causal_softmax_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(
      static_cast<__nv_bfloat16*>(scores), row_len, scale);
  return cudaGetLastError();
}

}  // namespace minivllm::bench
