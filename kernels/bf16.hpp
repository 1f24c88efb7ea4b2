#pragma once
// bfloat16 <-> float32 on raw bit patterns, identical on host and device. Rounding is
// round-to-nearest-even, the rule random-v1 checkpoints and PyTorch use.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MINIVLLM_HOST_DEVICE __host__ __device__
#else
#define MINIVLLM_HOST_DEVICE
#endif

namespace minivllm {

MINIVLLM_HOST_DEVICE inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

MINIVLLM_HOST_DEVICE inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

MINIVLLM_HOST_DEVICE inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t bits = float_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: keep it a (quiet) NaN, never round to inf
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

MINIVLLM_HOST_DEVICE inline float bf16_to_f32(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

}  // namespace minivllm
