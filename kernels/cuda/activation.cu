#include "kernels/cuda/activation.cuh"

#include <algorithm>

#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65536;

template <class T>
__global__ void silu_and_mul_kernel(const T* gate, const T* up, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const float g = to_float(gate[i]);
    out[i] = from_float<T>(g / (1.0f + expf(-g)) * to_float(up[i]));
  }
}

}  // namespace

cudaError_t launch_silu_and_mul(DType dtype, const void* gate, const void* up, void* out,
                                std::int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (gate == nullptr || up == nullptr || out == nullptr) return cudaErrorInvalidValue;
  // Grid-stride loop: enough blocks to fill the GPU, never more than the data needs.
  const std::int64_t blocks = std::min((n + kThreads - 1) / kThreads, kMaxBlocks);
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    silu_and_mul_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out), n);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
