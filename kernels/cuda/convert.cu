#include "kernels/bf16.hpp"
#include "kernels/cuda/convert.cuh"

namespace minivllm::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void f32_to_bf16_kernel(const float* src, std::uint16_t* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    dst[i] = f32_to_bf16(src[i]);
}

__global__ void bf16_to_f32_kernel(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    dst[i] = bf16_to_f32(src[i]);
}

// Grid-stride loops: enough blocks to fill the GPU, never more than the data needs.
unsigned blocks_for(std::int64_t n) {
  std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

cudaError_t launch_f32_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  f32_to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t launch_bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bf16_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

}  // namespace minivllm::cuda
