#pragma once
// The gated MLP's activation on the GPU.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// out[i] = silu(gate[i]) * up[i] for i < n, silu(x) = x / (1 + exp(-x)), in fp32; all three hold
// `dtype` (bf16 or f32) on the device; out may alias gate or up.
cudaError_t launch_silu_and_mul(DType dtype, const void* gate, const void* up, void* out,
                                std::int64_t n, cudaStream_t stream);

}  // namespace minivllm::cuda
