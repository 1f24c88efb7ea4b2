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
__global__ void silu_and_mul_kernel(const T* gate_up, T* out, std::int64_t n, std::int64_t width) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t row = i / width;
    const T* gate = gate_up + row * 2 * width + (i - row * width);
    const float g = to_float(gate[0]);
    out[i] = from_float<T>(g / (1.0f + expf(-g)) * to_float(gate[width]));
  }
}

}  // namespace

cudaError_t launch_silu_and_mul(DType dtype, const void* gate_up, void* out, std::int64_t rows,
                                std::int64_t width, cudaStream_t stream) {
  if (rows < 0 || width < 0) return cudaErrorInvalidValue;
  const std::int64_t n = rows * width;
  if (n == 0) return cudaSuccess;
  if (gate_up == nullptr || out == nullptr) return cudaErrorInvalidValue;
  // Grid-stride loop: enough blocks to fill the GPU, never more than the data needs.
  const std::int64_t blocks = std::min((n + kThreads - 1) / kThreads, kMaxBlocks);
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    silu_and_mul_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(gate_up), static_cast<T*>(out), n, width);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
