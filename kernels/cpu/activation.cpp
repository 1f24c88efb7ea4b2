#include "kernels/cpu/activation.hpp"

#include <cmath>

namespace minivllm::cpu {

void silu_and_mul(const float* gate_up, float* out, std::int64_t rows, std::int64_t width) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * 2 * width;
    const float* up = gate + width;
    float* o = out + r * width;
    for (std::int64_t i = 0; i < width; ++i) o[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
}

}  // namespace minivllm::cpu
