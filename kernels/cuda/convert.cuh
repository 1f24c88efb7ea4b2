#pragma once
// Element type conversion on the GPU (weights stored in f32 loaded as bf16, and back).
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda {

// dst[i] = bf16(src[i]), round-to-nearest-even, for i < n.
cudaError_t launch_f32_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n,
                               cudaStream_t stream);

// dst[i] = float(src[i]) (exact), for i < n.
cudaError_t launch_bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n,
                               cudaStream_t stream);

}  // namespace minivllm::cuda
