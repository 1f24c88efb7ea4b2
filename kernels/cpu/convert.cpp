#include "kernels/cpu/convert.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/bf16.hpp"
#include "kernels/cpu/checked_range.hpp"

namespace minivllm::cpu {

namespace {

// bf16_to_f32 written out: GCC inlines no call into a function whose sanitizer attributes differ.
MV_NO_SANITIZE void bf16_to_f32_unchecked(const std::uint16_t* s, float* dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(s[i]) << 16;
    std::memcpy(dst + i, &bits, sizeof bits);
  }
}

MV_NO_SANITIZE float dot_unchecked(const float* a, const float* b, std::int64_t n) {
  // Sixteen running sums (four SSE vectors): independent chains, so the adds pipeline.
  constexpr std::int64_t kLanes = 16;
  float partial[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
#pragma GCC unroll 16
    for (std::int64_t j = 0; j < kLanes; ++j) partial[j] += a[i + j] * b[i + j];
  float sum = 0.0f;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (float p : partial) sum += p;
  return sum;
}

}  // namespace

void to_f32(const void* src, DType src_dtype, float* dst, std::int64_t n) {
  switch (src_dtype) {
    case DType::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case DType::bf16:
      check_range(src, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
      check_range(dst, static_cast<std::size_t>(n) * sizeof(float));
      bf16_to_f32_unchecked(static_cast<const std::uint16_t*>(src), dst, n);
      return;
    case DType::f16:
    case DType::fp8_e4m3: break;
  }
  throw std::invalid_argument(std::string("CPU kernels read bf16 or f32 data, not ") +
                              std::string(dtype_name(src_dtype)));
}

float dot(const float* a, const float* b, std::int64_t n) {
  check_range(a, static_cast<std::size_t>(n) * sizeof(float));
  check_range(b, static_cast<std::size_t>(n) * sizeof(float));
  return dot_unchecked(a, b, n);
}

}  // namespace minivllm::cpu
