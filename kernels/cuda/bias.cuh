#pragma once
// A linear layer's bias on the GPU.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// x[r, c] += bias[c] in fp32, rounded back to `dtype` (bf16 or f32), for r < rows, c < cols; x
// and bias both hold `dtype` on the device.
cudaError_t launch_add_bias(DType dtype, void* x, const void* bias, std::int64_t rows,
                            std::int64_t cols, cudaStream_t stream);

}  // namespace minivllm::cuda
