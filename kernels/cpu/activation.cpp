#include "kernels/cpu/activation.hpp"

#include <cmath>

namespace minivllm::cpu {

void silu_and_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace minivllm::cpu
