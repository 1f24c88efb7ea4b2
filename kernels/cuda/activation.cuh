#pragma once
// The gated MLP's activation on the GPU.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// out[r, i] = silu(gate_up[r, i]) * gate_up[r, width + i] in fp32, silu(x) = x / (1 + exp(-x)):
// each row of gate_up [rows, 2 * width] holds gate then up (the fused gate/up projection);
// out [rows, width]. Both hold `dtype` (bf16 or f32) on the device and must not overlap.
cudaError_t launch_silu_and_mul(DType dtype, const void* gate_up, void* out, std::int64_t rows,
                                std::int64_t width, cudaStream_t stream);

}  // namespace minivllm::cuda
