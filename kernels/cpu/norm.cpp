#include "kernels/cpu/norm.hpp"

#include <cmath>
#include <vector>

#include "kernels/cpu/convert.hpp"

namespace minivllm::cpu {

namespace {
void normalize_row(const float* x, const float* w, float* out, std::int64_t dim, float eps) {
  const float mean_square = dot(x, x, dim) / static_cast<float>(dim);
  const float inv_rms = 1.0f / std::sqrt(mean_square + eps);
  for (std::int64_t i = 0; i < dim; ++i) out[i] = x[i] * inv_rms * w[i];
}

std::vector<float> weight_f32(const void* weight, DType dtype, std::int64_t dim) {
  std::vector<float> w(static_cast<std::size_t>(dim));
  to_f32(weight, dtype, w.data(), dim);
  return w;
}
}  // namespace

void rms_norm(const float* x, const void* weight, DType weight_dtype, float* out,
              std::int64_t rows, std::int64_t dim, float eps) {
  const auto w = weight_f32(weight, weight_dtype, dim);
  for (std::int64_t r = 0; r < rows; ++r) normalize_row(x + r * dim, w.data(), out + r * dim, dim, eps);
}

void add_rms_norm(const float* x, float* residual, const void* weight, DType weight_dtype,
                  float* out, std::int64_t rows, std::int64_t dim, float eps) {
  const auto w = weight_f32(weight, weight_dtype, dim);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* res = residual + r * dim;
    for (std::int64_t i = 0; i < dim; ++i) res[i] += x[r * dim + i];
    normalize_row(res, w.data(), out + r * dim, dim, eps);
  }
}

}  // namespace minivllm::cpu
