#pragma once
// A linear layer's bias.
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// x[r, c] += bias[c] for r < rows, c < cols; bias holds bf16 or f32 values.
void add_bias(float* x, const void* bias, DType bias_dtype, std::int64_t rows, std::int64_t cols);

}  // namespace minivllm::cpu
