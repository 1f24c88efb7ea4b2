// CudaOps' normed projections with the norm run inside the skinny GEMM (MINIVLLM_NORM_GEMM=1)
// against the ops they fuse, on the same ops (Ops::pre_norm, then linear or
// linear_silu_and_mul): the outputs within bf16 rounding, the updated residual stream bit for bit,
// and the stream's tensor replaced only where the GEMM took the norm (the skinny GEMM's rows).
// Skips without a CUDA device.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include "kernels/bf16.hpp"

namespace minivllm {
namespace {

class CudaNormedLinear : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaOps::device_available()) GTEST_SKIP() << "no CUDA device visible to this process";
    ::setenv("MINIVLLM_NORM_GEMM", "1", 1);  // read once, by the constructor
    ops_ = std::make_unique<CudaOps>(DType::bf16);
    ::unsetenv("MINIVLLM_NORM_GEMM");
  }

  // A bf16 tensor of uniform values in [lo, hi).
  Tensor random_bf16(const Shape& shape, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(shape_numel(shape)));
    for (auto& b : bits) b = f32_to_bf16(dist(rng_));
    return ops_->from_host(bits.data(), DType::bf16, shape);
  }
  Tensor copy(const Tensor& t) {
    return ops_->from_host(bits(t).data(), t.dtype(), t.shape());
  }
  std::vector<std::uint16_t> bits(const Tensor& t) {
    std::vector<std::uint16_t> out(static_cast<std::size_t>(t.numel()));
    ops_->to_host(t, out.data());
    return out;
  }
  std::vector<float> values(const Tensor& t) {
    std::vector<float> out;
    for (std::uint16_t b : bits(t)) out.push_back(bf16_to_f32(b));
    return out;
  }

  // For m rows of hidden 1024 into out_rows: normed_linear (or the silu form) against the
  // composed ops, with and without x. `fused`: whether the GEMM must have taken the norm.
  void check(std::int64_t m, std::int64_t out_rows, bool silu_and_mul, bool fused) {
    constexpr std::int64_t kHidden = 1024;
    constexpr float kEps = 1e-6f;
    const Tensor norm_weight = random_bf16({kHidden}, 0.5f, 1.5f);
    const Tensor weight = random_bf16({out_rows, kHidden}, -0.05f, 0.05f);
    for (const bool add : {true, false}) {
      SCOPED_TRACE("m " + std::to_string(m) + " out " + std::to_string(out_rows) +
                   (silu_and_mul ? " silu_and_mul" : "") + (add ? " x + residual" : " residual"));
      const Tensor x = add ? random_bf16({m, kHidden}, -2, 2) : Tensor{};
      Tensor residual = random_bf16({m, kHidden}, -2, 2);
      Tensor composed_residual = copy(residual);
      const void* before = residual.data();
      const PreNorm in{x, residual, norm_weight, kEps};
      const PreNorm composed_in{x, composed_residual, norm_weight, kEps};
      const Tensor got = silu_and_mul ? ops_->normed_linear_silu_and_mul(in, weight)
                                      : ops_->normed_linear(in, weight);
      const Tensor h = ops_->pre_norm(composed_in);
      const Tensor want = silu_and_mul ? ops_->linear_silu_and_mul(h, weight)
                                       : ops_->linear(h, weight);
      ASSERT_EQ(got.shape(), want.shape());
      const std::vector<float> g = values(got), w = values(want);
      double squares = 0;
      for (float v : w) squares += double{v} * v;
      const double rms = std::sqrt(squares / static_cast<double>(w.size()));
      std::size_t off = 0;
      for (std::size_t i = 0; i < w.size(); ++i)
        off += !(std::fabs(g[i] - w[i]) <= 2e-2 * (std::fabs(w[i]) + rms));  // both round to bf16
      EXPECT_EQ(off, 0u) << "outputs outside bf16 rounding of the composed ops'";
      EXPECT_EQ(bits(residual), bits(composed_residual)) << "the residual streams differ";
      EXPECT_EQ(residual.data() != before, add && fused)
          << "the stream's tensor is replaced exactly when the GEMM adds x and takes the norm";
    }
  }

  std::mt19937 rng_{7};
  std::unique_ptr<CudaOps> ops_;
};

// Qwen3-0.6B's qkv (1024 -> 4096) and gate/up (1024 -> 2 x 3072): the skinny GEMM takes qkv up
// to 3 rows and gate/up with the activation up to 2 (cuda_ops.cpp's gemm_kernel_for); past
// those the ops compose as before.
TEST_F(CudaNormedLinear, FusedWhereTheSkinnyGemmRunsComposedElsewhere) {
  check(1, 4096, false, true);
  check(3, 4096, false, true);
  check(4, 4096, false, false);
  check(1, 6144, true, true);
  check(2, 6144, true, true);
  check(3, 6144, true, false);
  check(64, 4096, false, false);
}

}  // namespace
}  // namespace minivllm
