#include "kernels/cuda/bias.cuh"

#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65536;

// Grid-stride over the elements of x; a bias is a few kilobytes, so its reads stay in cache.
template <class T>
__global__ void add_bias_kernel(T* __restrict__ x, const T* __restrict__ bias, std::int64_t n,
                                std::int64_t cols) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    x[i] = detail::from_float<T>(detail::to_float(x[i]) + detail::to_float(bias[i % cols]));
}

}  // namespace

cudaError_t launch_add_bias(DType dtype, void* x, const void* bias, std::int64_t rows,
                            std::int64_t cols, cudaStream_t stream) {
  const std::int64_t n = rows * cols;
  if (n <= 0) return cudaSuccess;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  const auto grid = static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    add_bias_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(x),
                                                      static_cast<const T*>(bias), n, cols);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
