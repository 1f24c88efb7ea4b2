#pragma once
// RMSNorm as Hugging Face computes it in fp32: x * rsqrt(mean(x^2) + eps) * weight.
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// Each of `rows` rows of x [rows, dim] normalized into out (which may alias x); weight [dim].
void rms_norm(const float* x, const void* weight, DType weight_dtype, float* out,
              std::int64_t rows, std::int64_t dim, float eps);

// The pre-norm block's fused step: residual += x, then out = rms_norm(residual).
void add_rms_norm(const float* x, float* residual, const void* weight, DType weight_dtype,
                  float* out, std::int64_t rows, std::int64_t dim, float eps);

}  // namespace minivllm::cpu
