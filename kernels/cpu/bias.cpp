#include "kernels/cpu/bias.hpp"

#include <vector>

#include "kernels/cpu/convert.hpp"

namespace minivllm::cpu {

void add_bias(float* x, const void* bias, DType bias_dtype, std::int64_t rows, std::int64_t cols) {
  std::vector<float> b(static_cast<std::size_t>(cols));
  to_f32(bias, bias_dtype, b.data(), cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
#pragma omp simd
    for (std::int64_t c = 0; c < cols; ++c) row[c] += b[static_cast<std::size_t>(c)];
  }
}

}  // namespace minivllm::cpu
