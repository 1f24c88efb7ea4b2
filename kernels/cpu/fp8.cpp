#include "kernels/cpu/fp8.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "kernels/fp8_scales.hpp"

namespace minivllm::cpu {

std::uint8_t e4m3_from_float(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80);
  if (std::isnan(x)) return 0x7F;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7E;  // +-448, also for +-inf (saturating)
  if (a < 0x1p-6f) {
    // Subnormal (and zero): a multiple of 2^-9, rounded to nearest even; 8 is the smallest
    // normal, 0x08. The product is exact, rint rounds half to even.
    return sign | static_cast<std::uint8_t>(std::rint(a * 0x1p9f));
  }
  // Normal: keep 3 of the 23 mantissa bits, rounded to nearest even on the bit pattern (a carry
  // into the exponent is the right result); below 448 nothing rounds past 448.
  const std::uint32_t abits = std::bit_cast<std::uint32_t>(a);
  const std::uint32_t rounded = abits + 0x7FFFFu + ((abits >> 20) & 1u);
  const std::uint32_t exponent = (rounded >> 23) - 127 + 7;  // 1..15
  const std::uint32_t mantissa = (rounded >> 20) & 7u;
  return sign | static_cast<std::uint8_t>((exponent << 3) | mantissa);
}

namespace {

float decode(std::uint8_t code) {
  const float sign = (code & 0x80) != 0 ? -1.0f : 1.0f;
  const int exponent = (code >> 3) & 0xF, mantissa = code & 7;
  if (exponent == 0xF && mantissa == 7) return NAN;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

// Every code's value, once: attention reads each cached element through it (a table lookup
// instead of two ldexp calls made the CPU backend's fp8 attention several times faster).
const std::array<float, 256> kDecoded = [] {
  std::array<float, 256> t{};
  for (std::size_t c = 0; c < t.size(); ++c) t[c] = decode(static_cast<std::uint8_t>(c));
  return t;
}();

}  // namespace

float e4m3_to_float(std::uint8_t code) { return kDecoded[code]; }

float e4m3_head_scale(float amax) {
  if (amax == 0.0f) return 1.0f;
  if (!std::isfinite(amax)) return 0x1p127f;
  // amax = m 2^e, m in [0.5, 1); 448 = 0.875 2^9: amax / 2^k <= 448 needs k >= e - 9, or e - 8
  // when m > 0.875.
  int e = 0;
  const float m = std::frexp(amax, &e);
  const int k = std::clamp(m <= 0.875f ? e - 9 : e - 8, -126, 127);
  return std::ldexp(1.0f, k);
}

void quantize_e4m3_head(const float* x, std::int64_t n, std::uint8_t* codes, std::uint8_t* scale) {
  float amax = 0.0f;  // fmax skips NaN, as the GPU's fmaxf does; a NaN element codes as 0x7F
  for (std::int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float s = e4m3_head_scale(amax);
  const float inverse = 1.0f / s;  // exact: a power of two
  for (std::int64_t i = 0; i < n; ++i) codes[i] = e4m3_from_float(x[i] * inverse);
  *scale = e8m0_from_scale(s);
}

void dequantize_e4m3_head(const std::uint8_t* codes, std::uint8_t scale, std::int64_t n,
                          float* out) {
  const float s = e8m0_to_scale(scale);
  for (std::int64_t i = 0; i < n; ++i) out[i] = kDecoded[codes[i]] * s;
}

}  // namespace minivllm::cpu
