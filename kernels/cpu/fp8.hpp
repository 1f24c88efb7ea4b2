#pragma once
// The e4m3 format of the fp8 KV cache (runtime/include/minivllm/kv_cache.hpp), the reference the
// CUDA cache write and attention kernels match bit for bit. e4m3 (OCP FP8): 1 sign, 4 exponent
// (bias 7), 3 mantissa bits; no infinities; 0x7F / 0xFF are NaN; the largest finite value is 448,
// the smallest normal 2^-6, subnormals step by 2^-9.
#include <cstdint>

namespace minivllm::cpu {

inline constexpr float kE4m3Max = 448.0f;

// Round to nearest even; finite values past +-448 saturate to +-448; NaN gives 0x7F (as the
// GPU's cvt.rn.satfinite does). Exact for every value the format holds.
std::uint8_t e4m3_from_float(float x);
// Exact.
float e4m3_to_float(std::uint8_t code);

// The power-of-two scale of a head whose largest |x| is `amax`: 2^k with the smallest k such that
// amax / 2^k <= 448, k clamped to [-126, 127] so that it and its inverse are normal floats (1 for
// amax 0; 2^127 for inf or NaN).
float e4m3_head_scale(float amax);

// One head of n values to codes and its scale: scale = e4m3_head_scale(max |x|), stored as e8m0
// (kernels/fp8_scales.hpp), code i = e4m3_from_float(x[i] / scale) (the division is exact: a power
// of two).
void quantize_e4m3_head(const float* x, std::int64_t n, std::uint8_t* codes, std::uint8_t* scale);
// The head back: out[i] = e4m3_to_float(codes[i]) * scale (exact).
void dequantize_e4m3_head(const std::uint8_t* codes, std::uint8_t scale, std::int64_t n,
                          float* out);

}  // namespace minivllm::cpu
