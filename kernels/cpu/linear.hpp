#pragma once
// y = x @ w^T, the projection of every linear layer (PyTorch's [out, in] weight layout).
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// x [m, k] f32, w [n, k] bf16 or f32, y [m, n] f32.
void linear(const float* x, const void* w, DType w_dtype, float* y, std::int64_t m,
            std::int64_t n, std::int64_t k);

}  // namespace minivllm::cpu
