#pragma once
// Device side of the fp8 KV cache's e4m3 format (runtime/include/minivllm/kv_cache.hpp): the same
// rounding, saturation and power-of-two head scales as the CPU reference, kernels/cpu/fp8.hpp,
// bit for bit. Included by .cu files only.
#include <cstdint>
#include <cstring>

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "kernels/fp8_scales.hpp"

namespace minivllm::cuda::detail {

// e4m3_head_scale of kernels/cpu/fp8.hpp: 2^k, the smallest k with amax / 2^k <= 448, k in
// [-126, 127]; 1 for 0, 2^127 for inf.
__device__ __forceinline__ float e4m3_head_scale(float amax) {
  if (amax == 0.0f) return 1.0f;
  if (!isfinite(amax)) return 0x1p127f;
  int e = 0;
  const float m = frexpf(amax, &e);
  const int k = min(max(m <= 0.875f ? e - 9 : e - 8, -126), 127);
  return ldexpf(1.0f, k);
}

// Two values as e4m3 codes (first in the low byte): round to nearest even, saturating at +-448.
__device__ __forceinline__ std::uint16_t e4m3x2_from_float(float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

// The two codes in half kHalf of `codes` (0: the low 16 bits; the first code in the lower byte)
// as f16 (exact: every e4m3 value is an f16), the first in the low half: an A or B register of
// mma.m16n8k16.f16 (decode), or the flash prefill's step to bf16. One instruction for either
// half: the conversion reads a register's upper half in place, where a shift in C++ costs one
// more.
template <int kHalf>
__device__ __forceinline__ std::uint32_t e4m3x2_to_half2_bits(std::uint32_t codes) {
  static_assert(kHalf == 0 || kHalf == 1);
  std::uint32_t bits;
  if constexpr (kHalf == 0)
    asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}\n"
        : "=r"(bits)
        : "r"(codes));
  else
    asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, hi;\n}\n"
        : "=r"(bits)
        : "r"(codes));
  return bits;
}

// v[i] * inverse as kElems consecutive codes at dst, in one store (kElems 1, 2, 4 or 8; dst
// aligned to kElems bytes).
template <int kElems>
__device__ __forceinline__ void store_e4m3(std::uint8_t* dst, const float (&v)[kElems],
                                           float inverse) {
  if constexpr (kElems == 1) {
    *dst = static_cast<std::uint8_t>(e4m3x2_from_float(v[0] * inverse, 0.0f) & 0xFF);
  } else {
    std::uint16_t pairs[kElems / 2];
#pragma unroll
    for (int i = 0; i < kElems / 2; ++i)
      pairs[i] = e4m3x2_from_float(v[2 * i] * inverse, v[2 * i + 1] * inverse);
    using Unit = std::conditional_t<kElems == 8, uint2,
                                    std::conditional_t<kElems == 4, unsigned, std::uint16_t>>;
    Unit unit;
    static_assert(sizeof unit == sizeof pairs);
    memcpy(&unit, pairs, sizeof unit);
    *reinterpret_cast<Unit*>(dst) = unit;
  }
}

}  // namespace minivllm::cuda::detail
