// The e4m3 format of the fp8 KV cache against its definition: every code, rounding to nearest even
// at every midpoint, saturation, NaN, and the power-of-two head scales.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/fp8.hpp"
#include "kernels/fp8_scales.hpp"

namespace minivllm::cpu {
namespace {

bool is_nan_code(std::uint8_t c) { return (c & 0x7F) == 0x7F; }

TEST(Fp8, EveryFiniteCodeDecodesToItsValueAndEncodesBackToItself) {
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(e4m3_to_float(0xC0), -2.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    if (is_nan_code(code)) continue;
    const float x = e4m3_to_float(code);
    // -0 encodes as 0x80, +0 as 0x00: the sign survives.
    EXPECT_EQ(e4m3_from_float(x), code) << "code " << c << " value " << x;
  }
}

TEST(Fp8, RoundsToNearestEvenAtEveryMidpointAndOtherwiseToNearest) {
  for (int c = 0; c < 0x7E; ++c) {  // each pair of neighbours below 448
    const auto lo = static_cast<std::uint8_t>(c), hi = static_cast<std::uint8_t>(c + 1);
    const float a = e4m3_to_float(lo), b = e4m3_to_float(hi);
    const float mid = (a + b) / 2;  // exact in f32
    const std::uint8_t even = (lo & 1) == 0 ? lo : hi;
    EXPECT_EQ(e4m3_from_float(mid), even) << a << " .. " << b;
    EXPECT_EQ(e4m3_from_float(-mid), even | 0x80);
    EXPECT_EQ(e4m3_from_float(std::nextafter(mid, a)), lo);
    EXPECT_EQ(e4m3_from_float(std::nextafter(mid, b)), hi);
  }
}

TEST(Fp8, SaturatesAtPlusMinus448AndNeverProducesNanFromANumber) {
  for (float x : {448.0f, 450.0f, 464.0f, 1e6f, std::numeric_limits<float>::max(), INFINITY}) {
    EXPECT_EQ(e4m3_from_float(x), 0x7E) << x;
    EXPECT_EQ(e4m3_from_float(-x), 0xFE) << x;
  }
  EXPECT_EQ(e4m3_from_float(0x1p-11f), 0x00);  // below half the smallest subnormal: zero
  EXPECT_EQ(e4m3_from_float(0x1p-10f), 0x00);  // the midpoint to 2^-9: even, zero
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(e4m3_from_float(NAN), 0x7F);
}

TEST(Fp8, HeadScaleIsTheSmallestPowerOfTwoThatBringsTheMaximumWithin448) {
  EXPECT_EQ(e4m3_head_scale(0.0f), 1.0f);
  EXPECT_EQ(e4m3_head_scale(448.0f), 1.0f);
  EXPECT_EQ(e4m3_head_scale(448.5f), 2.0f);
  EXPECT_EQ(e4m3_head_scale(224.0f), 0.5f);
  EXPECT_EQ(e4m3_head_scale(224.1f), 1.0f);
  EXPECT_EQ(e4m3_head_scale(1.0f), 0x1p-8f);  // 1 / 2^-8 = 256 <= 448 < 512
  EXPECT_EQ(e4m3_head_scale(INFINITY), 0x1p127f);
  EXPECT_EQ(e4m3_head_scale(1e-38f), 0x1p-126f);  // clamped: its inverse stays finite
  for (float amax = 1e-30f; amax < 1e30f; amax *= 1.37f) {
    const float s = e4m3_head_scale(amax);
    EXPECT_LE(amax / s, 448.0f) << amax;
    EXPECT_GT(amax / s, 224.0f) << amax;
  }
}

TEST(Fp8, ScalesAreTheirExponentByte) {
  for (int k = -126; k <= 127; ++k) {
    const float scale = std::ldexp(1.0f, k);
    EXPECT_EQ(e8m0_from_scale(scale), k + 127) << k;
    EXPECT_EQ(e8m0_to_scale(e8m0_from_scale(scale)), scale) << k;
  }
  EXPECT_EQ(e8m0_from_scale(e4m3_head_scale(INFINITY)), 254);
  EXPECT_EQ(e8m0_from_scale(e4m3_head_scale(1e-38f)), 1);
}

TEST(Fp8, AHeadsScalesOfOneBlockAreConsecutiveBytes) {
  // [num_blocks, num_kv_heads, block_size]: 2 heads, blocks of 16.
  EXPECT_EQ(fp8_slot_scale_index(0, 0, 2, 16), 0);
  EXPECT_EQ(fp8_slot_scale_index(15, 0, 2, 16), 15);
  EXPECT_EQ(fp8_slot_scale_index(0, 1, 2, 16), 16);
  EXPECT_EQ(fp8_slot_scale_index(16, 0, 2, 16), 32);
  EXPECT_EQ(fp8_slot_scale_index(17, 1, 2, 16), 49);
  // Every (slot, head) of a 3-block cache has its own byte.
  std::vector<int> seen(3 * 2 * 5, 0);
  for (std::int64_t slot = 0; slot < 15; ++slot)
    for (std::int64_t h = 0; h < 2; ++h) ++seen[fp8_slot_scale_index(slot, h, 2, 5)];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 30);
}

// The cache write divides in 32 bits (its host bounds the slots): the same index as in 64, up to
// the largest 32-bit slot.
TEST(Fp8, ThirtyTwoBitSlotsGiveTheSameIndex) {
  for (const std::int64_t block_size : {1, 7, 16, 256})
    for (const std::int64_t slot : {std::int64_t{0}, block_size - 1, block_size, 5 * block_size + 3,
                                    std::int64_t{0xFFFFFFFF}})
      for (const std::int64_t h : {0, 7})
        EXPECT_EQ(fp8_slot_scale_index(static_cast<std::uint32_t>(slot), h, 8, block_size),
                  fp8_slot_scale_index(slot, h, 8, block_size))
            << "slot " << slot << ", block size " << block_size;
}

TEST(Fp8, QuantizedHeadsRoundTripWithinHalfAStepOfTheirScale) {
  std::vector<float> x(128);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) * 3.0f;
  std::vector<std::uint8_t> codes(x.size());
  std::uint8_t scale_e8m0 = 0;
  quantize_e4m3_head(x.data(), 128, codes.data(), &scale_e8m0);
  EXPECT_EQ(scale_e8m0, 127 - 7);  // max |x| ~ 3: 3 / 2^-7 = 384
  const float scale = e8m0_to_scale(scale_e8m0);
  std::vector<float> back(x.size());
  dequantize_e4m3_head(codes.data(), scale_e8m0, 128, back.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(codes[i], e4m3_from_float(x[i] / scale));
    // 3 mantissa bits: relative error at most 2^-4 for normals, 2^-10 scale for subnormals.
    EXPECT_LE(std::fabs(back[i] - x[i]), std::fmax(std::fabs(x[i]) * 0x1p-4f, scale * 0x1p-10f))
        << i;
  }
}

}  // namespace
}  // namespace minivllm::cpu
