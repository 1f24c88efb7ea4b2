// The skinny GEMM (decode-sized m) against the CPU reference linear (kernels/cpu/linear.hpp), for
// the shapes of Qwen3-0.6B's projections, its tied lm_head, and odd sizes, bf16 and f32 out.
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/linear.hpp"
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

}  // namespace
}  // namespace minivllm
