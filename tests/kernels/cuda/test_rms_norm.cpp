// RMSNorm and the fused residual add + RMSNorm against the CPU reference (kernels/cpu/norm.hpp).
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cuda/rms_norm.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

struct Shape {
  std::int64_t rows, dim;
};
// Hidden sizes of Qwen3-0.6B (1024) and Llama 3.2 1B (2048), 8B-class (4096), the tiny models'
// (64), and Qwen3's per-head q/k norm (tokens * heads rows of head_dim 128, 16). They cover the
// kernel's paths: a block per row holding 1 to 8 16-byte vectors per thread (fewer than 1024
// rows, or long rows: 4096, 12288); a warp per row with 1, 2 or 4 vectors per lane and 2 or 4
// rows per block (2048, 1027 and 4099 rows, the last two ending in a partial block); the scalar
// kernel (33: not whole vectors; 20000: longer than a block holds).
constexpr Shape kShapes[] = {{1, 1024},    {7, 2048},   {300, 64},  {5, 4096},
                             {33, 16},     {16 * 37, 128}, {2, 1000}, {3, 33},
                             {4099, 1024}, {1027, 512}, {2048, 64}, {3, 12288}, {2, 20000}};
constexpr float kEps = 1e-6f;

std::string describe(DType dtype, Shape s) {
  return std::string(dtype_name(dtype)) + " rows " + std::to_string(s.rows) + " dim " +
         std::to_string(s.dim);
}

class RmsNormKernel : public test::CudaKernelTest {};

TEST_F(RmsNormKernel, MatchesReference) {
  for (const Shape s : kShapes) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(describe(dtype, s));
      const auto n = static_cast<std::size_t>(s.rows * s.dim);
      const auto x = random_values(n, -2, 2, dtype);
      const auto weight = random_values(static_cast<std::size_t>(s.dim), 0.5f, 1.5f, dtype);
      DeviceBuffer d_x = test::upload(x, dtype);
      DeviceBuffer d_weight = test::upload(weight, dtype);
      DeviceBuffer d_out(n * dtype_size(dtype));
      test::poison(d_out);
      ASSERT_CUDA(cuda::launch_rms_norm(dtype, d_x.get(), d_weight.get(), d_out.get(), s.rows,
                                        s.dim, kEps, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      std::vector<float> want(n);
      cpu::rms_norm(x.data(), weight.data(), DType::f32, want.data(), s.rows, s.dim, kEps);
      test::expect_close(test::download(d_out, dtype, n), want, test::tolerance(dtype), "out");

      // In place, as the per-head q/k norm runs.
      ASSERT_CUDA(cuda::launch_rms_norm(dtype, d_x.get(), d_weight.get(), d_x.get(), s.rows, s.dim,
                                        kEps, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      test::expect_close(test::download(d_x, dtype, n), want, test::tolerance(dtype), "in place");
    }
  }
}

TEST_F(RmsNormKernel, AddRmsNormMatchesReference) {
  for (const Shape s : kShapes) {
    for (DType dtype : test::kElementTypes) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(describe(dtype, s) + (in_place ? " out = x" : ""));
        const auto n = static_cast<std::size_t>(s.rows * s.dim);
        const auto x = random_values(n, -2, 2, dtype);
        auto residual = random_values(n, -2, 2, dtype);
        const auto weight = random_values(static_cast<std::size_t>(s.dim), 0.5f, 1.5f, dtype);
        DeviceBuffer d_x = test::upload(x, dtype);
        DeviceBuffer d_residual = test::upload(residual, dtype);
        DeviceBuffer d_weight = test::upload(weight, dtype);
        DeviceBuffer d_out(n * dtype_size(dtype));
        test::poison(d_out);
        void* out = in_place ? d_x.get() : d_out.get();
        ASSERT_CUDA(cuda::launch_add_rms_norm(dtype, d_x.get(), d_residual.get(), d_weight.get(),
                                              out, s.rows, s.dim, kEps, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));
        std::vector<float> want(n);
        cpu::add_rms_norm(x.data(), residual.data(), weight.data(), DType::f32, want.data(),
                          s.rows, s.dim, kEps);
        test::expect_close(test::download(in_place ? d_x : d_out, dtype, n), want,
                           test::tolerance(dtype), "out");
        test::expect_close(test::download(d_residual, dtype, n), residual, test::tolerance(dtype),
                           "residual");
      }
    }
  }
}

// Rows starting one element past a 16-byte boundary take the scalar kernel.
TEST_F(RmsNormKernel, UnalignedRowsMatchReference) {
  const Shape s{9, 1024};
  for (DType dtype : test::kElementTypes) {
    SCOPED_TRACE(describe(dtype, s));
    const auto n = static_cast<std::size_t>(s.rows * s.dim);
    const auto x = random_values(n + 1, -2, 2, dtype);
    auto residual = random_values(n + 1, -2, 2, dtype);
    const auto weight = random_values(static_cast<std::size_t>(s.dim), 0.5f, 1.5f, dtype);
    DeviceBuffer d_x = test::upload(x, dtype), d_residual = test::upload(residual, dtype);
    DeviceBuffer d_weight = test::upload(weight, dtype);
    DeviceBuffer d_out((n + 1) * dtype_size(dtype));
    test::poison(d_out);
    const std::size_t one = dtype_size(dtype);
    ASSERT_CUDA(cuda::launch_add_rms_norm(dtype, d_x.as<char>() + one, d_residual.as<char>() + one,
                                          d_weight.get(), d_out.as<char>() + one, s.rows, s.dim,
                                          kEps, nullptr));
    ASSERT_CUDA(cudaStreamSynchronize(nullptr));
    std::vector<float> want(n);
    cpu::add_rms_norm(x.data() + 1, residual.data() + 1, weight.data(), DType::f32, want.data(),
                      s.rows, s.dim, kEps);
    auto got = test::download(d_out, dtype, n + 1);
    got.erase(got.begin());
    test::expect_close(got, want, test::tolerance(dtype), "out");
  }
}

TEST_F(RmsNormKernel, RejectsBadShapes) {
  DeviceBuffer buf(64);
  EXPECT_EQ(
      cuda::launch_rms_norm(DType::bf16, buf.get(), buf.get(), buf.get(), -1, 8, kEps, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_rms_norm(DType::f16, buf.get(), buf.get(), buf.get(), 1, 8, kEps, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_add_rms_norm(DType::f32, buf.get(), nullptr, buf.get(), buf.get(), 1, 8,
                                      kEps, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace minivllm
