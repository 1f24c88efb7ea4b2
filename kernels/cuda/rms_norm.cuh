#pragma once
// RMSNorm on the GPU, alone and fused with the residual add of a pre-norm block.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// out = x * rsqrt(mean(x^2) + eps) * weight for each row of x [rows, dim]; weight [dim]; all
// `dtype` (bf16 or f32) on the device, math in fp32. out may alias x (in place: Qwen3's per-head
// q/k norm is rows = tokens * heads, dim = head_dim).
cudaError_t launch_rms_norm(DType dtype, const void* x, const void* weight, void* out,
                            std::int64_t rows, std::int64_t dim, float eps, cudaStream_t stream);

// residual += x, stored in `dtype` (rounded as Hugging Face's bf16 add is), then
// out = rms_norm(residual) of the stored values. out may alias x, not residual.
cudaError_t launch_add_rms_norm(DType dtype, const void* x, void* residual, const void* weight,
                                void* out, std::int64_t rows, std::int64_t dim, float eps,
                                cudaStream_t stream);

}  // namespace minivllm::cuda
