#include "kernels/cpu/rope.hpp"

#include <cmath>
#include <vector>

namespace minivllm::cpu {

void rotary_embedding(float* x, const std::int32_t* positions, const float* inv_freq,
                      std::int64_t num_tokens, std::int64_t num_heads, std::int64_t head_dim) {
  const std::int64_t half = head_dim / 2;
  std::vector<float> cos_v(static_cast<std::size_t>(half)), sin_v(static_cast<std::size_t>(half));
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];  // fp32, as HF does
      cos_v[i] = std::cos(angle);
      sin_v[i] = std::sin(angle);
    }
    for (std::int64_t h = 0; h < num_heads; ++h) {
      float* head = x + (t * num_heads + h) * head_dim;
      for (std::int64_t i = 0; i < half; ++i) {
        const float a = head[i], b = head[i + half];
        head[i] = a * cos_v[i] - b * sin_v[i];
        head[i + half] = b * cos_v[i] + a * sin_v[i];
      }
    }
  }
}

}  // namespace minivllm::cpu
