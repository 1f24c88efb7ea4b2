// The skinny GEMM (decode-sized m) against the CPU reference linear (kernels/cpu/linear.hpp), for
// the shapes of Qwen3-0.6B's projections, its tied lm_head, and odd sizes, bf16 and f32 out; and
// its fused gate/up + silu_and_mul form against the two kernels it replaces (bit for bit) and the
// CPU reference.
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/skinny_gemm.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

struct Shape {
  std::int64_t in, out;
};
// q (2048), k/v (1024), fused qkv (4096), o (in 2048), gate/up (3072), fused gate_up (6144),
// down (in 3072); then sizes that leave a partial row tile, a partial unrolled step, one chunk.
constexpr Shape kModelShapes[] = {{1024, 1024}, {1024, 2048}, {1024, 3072}, {1024, 4096},
                                  {1024, 6144}, {2048, 1024}, {3072, 1024}};
constexpr Shape kOddShapes[] = {{1000, 33}, {8, 5}, {2056, 7}, {136, 1}};
constexpr Shape kLmHead = {1024, 151936};

std::string describe(DType out_dtype, std::int64_t m, Shape s) {
  return std::string(dtype_name(out_dtype)) + " m " + std::to_string(m) + " in " +
         std::to_string(s.in) + " out " + std::to_string(s.out);
}

class SkinnyGemmKernel : public test::CudaKernelTest {
 protected:
  // For each m, a GEMM on fresh x against the reference, for each output dtype (one W per shape:
  // generating it dominates the test's time).
  void check(Shape s, std::initializer_list<std::int64_t> ms) {
    const auto w = random_values(static_cast<std::size_t>(s.out * s.in), -1, 1, DType::bf16);
    DeviceBuffer d_w = test::upload(w, DType::bf16);
    std::vector<std::uint16_t> w_bits(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) w_bits[i] = f32_to_bf16(w[i]);
    for (const std::int64_t m : ms) {
      const auto x = random_values(static_cast<std::size_t>(m * s.in), -1, 1, DType::bf16);
      DeviceBuffer d_x = test::upload(x, DType::bf16);
      const auto n = static_cast<std::size_t>(m * s.out);
      std::vector<float> want(n);
      cpu::linear(x.data(), w_bits.data(), DType::bf16, want.data(), m, s.out, s.in);
      for (DType out_dtype : test::kElementTypes) {
        SCOPED_TRACE(describe(out_dtype, m, s));
        DeviceBuffer d_y(n * dtype_size(out_dtype));
        test::poison(d_y);
        ASSERT_TRUE(cuda::skinny_gemm_supports(s.in, d_x.get(), d_w.get()));
        ASSERT_CUDA(cuda::launch_skinny_gemm(d_x.get(), d_w.get(), out_dtype, d_y.get(), m, s.out,
                                             s.in, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));
        test::expect_close(test::download(d_y, out_dtype, n), want, test::tolerance(out_dtype),
                           "y");
      }
    }
  }
};

TEST_F(SkinnyGemmKernel, ModelShapesMatchReference) {
  for (const Shape s : kModelShapes)
    check(s, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
}

// Beyond the largest bucket the launcher runs slices of 16 rows (a full and a partial one here).
TEST_F(SkinnyGemmKernel, LargeMMatchesReference) {
  for (const Shape s : {kModelShapes[0], kModelShapes[6]}) check(s, {17, 32, 37});
}

TEST_F(SkinnyGemmKernel, OddShapesMatchReference) {
  for (const Shape s : kOddShapes) check(s, {1, 3, 16});
}

TEST_F(SkinnyGemmKernel, LmHeadMatchesReference) {
  check(kLmHead, {1, 5, 16});
}

TEST_F(SkinnyGemmKernel, RejectsWhatItCannotRead) {
  DeviceBuffer buf(4096);
  const auto* base = buf.as<char>();
  EXPECT_FALSE(cuda::skinny_gemm_supports(1001, base, base));  // in not a multiple of 8
  EXPECT_FALSE(cuda::skinny_gemm_supports(1024, base + 2, base));  // x not 16-byte aligned
  EXPECT_FALSE(cuda::skinny_gemm_supports(1024, base, base + 8));  // w not 16-byte aligned
  EXPECT_EQ(cuda::launch_skinny_gemm(buf.get(), buf.get(), DType::bf16, buf.get(), 1, 4, 1001,
                                     nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_skinny_gemm(buf.get(), buf.get(), DType::f16, buf.get(), 1, 4, 8,
                                     nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_skinny_gemm(buf.get(), buf.get(), DType::bf16, buf.get(), -1, 4, 8,
                                     nullptr),
            cudaErrorInvalidValue);
}

// launch_skinny_gemm_silu_and_mul: out [m, width] from x [m, in] and gate_up W [2 * width, in].
class SkinnyGemmSiluAndMulKernel : public test::CudaKernelTest {
 protected:
  // For each m, on fresh x: the fused kernel against the skinny GEMM (bf16 gate_up) followed by
  // silu_and_mul, which it must match bit for bit, and against the CPU reference of the same
  // (gate_up rounded to bf16 as the GEMM stores it: for outputs near zero that rounding alone
  // can exceed the tolerance).
  void check(std::int64_t in, std::int64_t width, std::initializer_list<std::int64_t> ms) {
    const auto w = random_values(static_cast<std::size_t>(2 * width * in), -1, 1, DType::bf16);
    DeviceBuffer d_w = test::upload(w, DType::bf16);
    std::vector<std::uint16_t> w_bits(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) w_bits[i] = f32_to_bf16(w[i]);
    for (const std::int64_t m : ms) {
      SCOPED_TRACE("m " + std::to_string(m) + " in " + std::to_string(in) + " width " +
                   std::to_string(width));
      const auto x = random_values(static_cast<std::size_t>(m * in), -1, 1, DType::bf16);
      DeviceBuffer d_x = test::upload(x, DType::bf16);
      const auto n = static_cast<std::size_t>(m * width);
      DeviceBuffer d_gate_up(2 * n * sizeof(std::uint16_t)), d_unfused(n * sizeof(std::uint16_t)),
          d_fused(n * sizeof(std::uint16_t));
      test::poison(d_unfused);
      test::poison(d_fused);
      ASSERT_CUDA(cuda::launch_skinny_gemm(d_x.get(), d_w.get(), DType::bf16, d_gate_up.get(), m,
                                           2 * width, in, nullptr));
      ASSERT_CUDA(cuda::launch_silu_and_mul(DType::bf16, d_gate_up.get(), d_unfused.get(), m,
                                            width, nullptr));
      ASSERT_CUDA(cuda::launch_skinny_gemm_silu_and_mul(d_x.get(), d_w.get(), d_fused.get(), m,
                                                        width, in, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      const auto fused = test::download(d_fused, DType::bf16, n);
      const auto unfused = test::download(d_unfused, DType::bf16, n);
      std::size_t differing = 0;
      for (std::size_t i = 0; i < n; ++i)  // NaN (an element left poisoned) compares by bits too
        differing +=
            std::bit_cast<std::uint32_t>(fused[i]) != std::bit_cast<std::uint32_t>(unfused[i]);
      EXPECT_EQ(differing, 0u) << "elements whose bits differ from the unfused kernels'";

      std::vector<float> gate_up(2 * n), want(n);
      cpu::linear(x.data(), w_bits.data(), DType::bf16, gate_up.data(), m, 2 * width, in);
      for (float& v : gate_up) v = test::stored_value(v, DType::bf16);
      cpu::silu_and_mul(gate_up.data(), want.data(), m, width);
      test::expect_close(fused, want, test::tolerance(DType::bf16), "out");
    }
  }
};

// Qwen3-0.6B's MLP (hidden 1024, intermediate 3072) at the decode m the fusion serves, and
// past the largest bucket (two slices); then odd sizes: a last tile of one column (33, 7, 5), a
// partial unrolled step (1000, 2056), one chunk (8).
TEST_F(SkinnyGemmSiluAndMulKernel, MatchesUnfusedBitForBit) {
  check(1024, 3072, {1, 2, 3, 4, 5, 6, 7, 8, 17});
  check(1000, 33, {1, 3, 8});
  check(2056, 7, {1, 2});
  check(8, 5, {1, 8});
}

TEST_F(SkinnyGemmSiluAndMulKernel, RejectsWhatItCannotRead) {
  DeviceBuffer buf(4096);
  EXPECT_EQ(cuda::launch_skinny_gemm_silu_and_mul(buf.get(), buf.get(), buf.get(), 1, 4, 1001,
                                                  nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_skinny_gemm_silu_and_mul(buf.as<char>() + 2, buf.get(), buf.get(), 1, 4,
                                                  8, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_skinny_gemm_silu_and_mul(buf.get(), buf.get(), buf.get(), -1, 4, 8,
                                                  nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_skinny_gemm_silu_and_mul(buf.get(), buf.get(), nullptr, 1, 4, 8, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace minivllm
