// The tile GEMM (decode batches on the tensor cores) against the CPU reference linear
// (kernels/cpu/linear.hpp) for Qwen3-0.6B's projections, its tied lm_head and odd sizes, in every
// tile shape, split and unsplit, bf16 and f32 out; a row's bits not depending on m or the tile
// shape for a given split count; split launches giving the same bits every time (their workspace
// counters reset); and the fused gate/up + silu_and_mul form against the two kernels it replaces,
// bit for bit.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/tile_gemm.cuh"

namespace minivllm {
namespace {

using cuda::TileGemmPlan;
using cuda::TileGemmShape;
using test::DeviceBuffer;

struct Shape {
  std::int64_t in, out;
};
// fused qkv (4096), o (in 2048), fused gate_up (6144), down (in 3072); then sizes that leave a
// partial tile of W rows and one step of in_features.
constexpr Shape kModelShapes[] = {{1024, 4096}, {2048, 1024}, {1024, 6144}, {3072, 1024}};
constexpr Shape kOddShapes[] = {{64, 33}, {128, 1}, {192, 7}, {1024, 100}};
constexpr TileGemmPlan kPlans[] = {
    {TileGemmShape::automatic, 0}, {TileGemmShape::m64n64, 1}, {TileGemmShape::m32n64, 1},
    {TileGemmShape::m32n32, 1},    {TileGemmShape::m64n64, 2}, {TileGemmShape::m32n32, 3}};

std::string describe(const TileGemmPlan& plan) {
  return " tile " + std::to_string(static_cast<int>(plan.shape)) + " splits " +
         std::to_string(plan.splits);
}

std::size_t differing_bits(const std::vector<float>& a, const std::vector<float>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i)  // NaN (an element left poisoned) compares by bits
    n += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
  return n;
}

// Random bf16 W [w_rows, in] and x [m, in], on the host and the device.
struct Operands {
  std::vector<float> w, x;
  std::vector<std::uint16_t> w_bits;
  DeviceBuffer d_w, d_x;

  Operands(std::vector<float> w_values, std::vector<float> x_values)
      : w(std::move(w_values)),
        x(std::move(x_values)),
        w_bits(w.size()),
        d_w(test::upload(w, DType::bf16)),
        d_x(test::upload(x, DType::bf16)) {
    for (std::size_t i = 0; i < w.size(); ++i) w_bits[i] = f32_to_bf16(w[i]);
  }
};

class TileGemmKernel : public test::CudaKernelTest {
 protected:
  void SetUp() override {
    test::CudaKernelTest::SetUp();
    if (IsSkipped()) return;
    workspace_buffer_.emplace(kWorkspaceBytes);
    ASSERT_CUDA(cudaMemset(workspace_buffer_->get(), 0, kWorkspaceBytes));
    workspace_ = {workspace_buffer_->get(), kWorkspaceBytes};
  }

  Operands random_operands(std::int64_t w_rows, std::int64_t in, std::int64_t m) {
    return Operands(random_values(static_cast<std::size_t>(w_rows * in), -1, 1, DType::bf16),
                    random_values(static_cast<std::size_t>(m * in), -1, 1, DType::bf16));
  }

  // y of the first m rows of `o` (or of x) in `out_dtype` by `plan`.
  std::vector<float> run(const Operands& o, Shape s, std::int64_t m, DType out_dtype,
                         TileGemmPlan plan, const void* x = nullptr) {
    const auto n = static_cast<std::size_t>(m * s.out);
    DeviceBuffer d_y(n * dtype_size(out_dtype));
    test::poison(d_y);
    const void* rows = x != nullptr ? x : o.d_x.get();
    EXPECT_TRUE(cuda::tile_gemm_supports(s.in, rows, o.d_w.get()));
    EXPECT_EQ(cuda::launch_tile_gemm(rows, o.d_w.get(), out_dtype, d_y.get(), m, s.out, s.in,
                                     workspace_, nullptr, plan),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    return test::download(d_y, out_dtype, n);
  }

  // For each m, every plan (or the unsplit ones) and output dtype against the reference.
  void check(Shape s, std::initializer_list<std::int64_t> ms, bool split_plans = true) {
    std::int64_t max_m = 0;
    for (const std::int64_t m : ms) max_m = std::max(max_m, m);
    const Operands o = random_operands(s.out, s.in, max_m);
    for (const std::int64_t m : ms) {
      std::vector<float> want(static_cast<std::size_t>(m * s.out));
      cpu::linear(o.x.data(), o.w_bits.data(), DType::bf16, want.data(), m, s.out, s.in);
      for (const TileGemmPlan& plan : kPlans)
        for (const DType out_dtype : test::kElementTypes) {
          if (!split_plans && plan.splits != 1) continue;
          SCOPED_TRACE(std::string(dtype_name(out_dtype)) + " m " + std::to_string(m) + " in " +
                       std::to_string(s.in) + " out " + std::to_string(s.out) + describe(plan));
          test::expect_close(run(o, s, m, out_dtype, plan), want, test::tolerance(out_dtype),
                             "y");
        }
    }
  }

  // Room for every explicit plan of kPlans on the model shapes at m = 256.
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  std::optional<DeviceBuffer> workspace_buffer_;
  cuda::TileGemmWorkspace workspace_;
};

TEST_F(TileGemmKernel, ModelShapesMatchReference) {
  for (const Shape s : kModelShapes) check(s, {1, 9, 16, 31, 64, 100, 256});
}

TEST_F(TileGemmKernel, OddShapesMatchReference) {
  for (const Shape s : kOddShapes) check(s, {1, 17, 33, 65});
}

// More tiles than a workspace counts: unsplit plans only.
TEST_F(TileGemmKernel, LmHeadMatchesReference) { check({1024, 151936}, {5, 64}, false); }

// Decode's batch invariance: for a given split count, a row's bits are the same whatever the
// batch around it, its place in the batch and the tile shape.
TEST_F(TileGemmKernel, RowsDoNotDependOnTheBatch) {
  const Shape s{2048, 1024};
  const std::int64_t m = 200;
  const Operands o = random_operands(s.out, s.in, m);
  for (const int splits : {1, 4}) {
    SCOPED_TRACE("splits " + std::to_string(splits));
    const std::vector<float> batch =
        run(o, s, m, DType::f32, {TileGemmShape::automatic, splits});
    for (const TileGemmShape shape :
         {TileGemmShape::m64n64, TileGemmShape::m32n64, TileGemmShape::m32n32})
      EXPECT_EQ(differing_bits(run(o, s, m, DType::f32, {shape, splits}), batch), 0u)
          << "tile " << static_cast<int>(shape);
    for (const std::int64_t row : {0, 1, 63, 64, 137, 199}) {
      const void* x = o.d_x.as<char>() + row * s.in * 2;
      const std::vector<float> alone =
          run(o, s, 1, DType::f32, {TileGemmShape::automatic, splits}, x);
      const std::vector<float> in_batch(batch.begin() + row * s.out,
                                        batch.begin() + (row + 1) * s.out);
      EXPECT_EQ(differing_bits(alone, in_batch), 0u) << "row " << row;
    }
  }
}

// The last block of a split tile resets its counter: launch after launch gives the same bits.
TEST_F(TileGemmKernel, SplitLaunchesRepeatExactly) {
  const Shape s{3072, 1024};
  const Operands o = random_operands(s.out, s.in, 64);
  const std::vector<float> first = run(o, s, 64, DType::bf16, {TileGemmShape::m32n32, 6});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(differing_bits(run(o, s, 64, DType::bf16, {TileGemmShape::m32n32, 6}), first), 0u);
}

TEST_F(TileGemmKernel, RejectsWhatItCannotRead) {
  DeviceBuffer buf(1 << 16);
  const auto* base = buf.as<char>();
  EXPECT_FALSE(cuda::tile_gemm_supports(1000, base, base));      // in not a multiple of 64
  EXPECT_FALSE(cuda::tile_gemm_supports(1024, base + 2, base));  // x not 16-byte aligned
  EXPECT_FALSE(cuda::tile_gemm_supports(1024, base, base + 8));  // w not 16-byte aligned
  const auto launch = [&](const void* y, DType out_dtype, std::int64_t m, std::int64_t in,
                          const cuda::TileGemmWorkspace& workspace, TileGemmPlan plan) {
    return cuda::launch_tile_gemm(buf.get(), buf.get(), out_dtype, const_cast<void*>(y), m, 4, in,
                                  workspace, nullptr, plan);
  };
  EXPECT_EQ(launch(base, DType::bf16, 1, 1000, workspace_, {}), cudaErrorInvalidValue);
  EXPECT_EQ(launch(base, DType::f16, 1, 64, workspace_, {}), cudaErrorInvalidValue);
  EXPECT_EQ(launch(base, DType::bf16, -1, 64, workspace_, {}), cudaErrorInvalidValue);
  EXPECT_EQ(launch(nullptr, DType::bf16, 1, 64, workspace_, {}), cudaErrorInvalidValue);
  EXPECT_EQ(launch(base, DType::bf16, 1, 64, workspace_, {TileGemmShape::automatic, -1}),
            cudaErrorInvalidValue);
  // Splits need a workspace: an explicit plan without one is refused; an automatic one runs
  // unsplit.
  EXPECT_EQ(launch(base, DType::bf16, 1, 512, {}, {TileGemmShape::automatic, 4}),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch(base, DType::bf16, 1, 512, {}, {}), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
}

// launch_tile_gemm_silu_and_mul: out [m, width] from x [m, in] and gate_up W [2 * width, in],
// against the tile GEMM (bf16 gate_up, same split count) then silu_and_mul, bit for bit, and the
// CPU reference of the same (gate_up rounded to bf16 as the GEMM stores it).
TEST_F(TileGemmKernel, SiluAndMulMatchesUnfusedBitForBit) {
  for (const auto& [in, width] : {std::pair<std::int64_t, std::int64_t>{1024, 3072}, {192, 40},
                                 {64, 7}}) {
    const std::int64_t max_m = 130;
    const Operands o = random_operands(2 * width, in, max_m);
    for (const std::int64_t m : {1, 16, 33, 130})
      for (const TileGemmPlan& plan : kPlans) {
        if (plan.shape == TileGemmShape::automatic) continue;  // automatic may split differently
        SCOPED_TRACE("m " + std::to_string(m) + " in " + std::to_string(in) + " width " +
                     std::to_string(width) + describe(plan));
        const auto n = static_cast<std::size_t>(m * width);
        DeviceBuffer d_gate_up(2 * n * 2), d_unfused(n * 2), d_fused(n * 2);
        test::poison(d_unfused);
        test::poison(d_fused);
        ASSERT_CUDA(cuda::launch_tile_gemm(o.d_x.get(), o.d_w.get(), DType::bf16,
                                           d_gate_up.get(), m, 2 * width, in, workspace_, nullptr,
                                           plan));
        ASSERT_CUDA(cuda::launch_silu_and_mul(DType::bf16, d_gate_up.get(), d_unfused.get(), m,
                                              width, nullptr));
        ASSERT_CUDA(cuda::launch_tile_gemm_silu_and_mul(o.d_x.get(), o.d_w.get(), d_fused.get(), m,
                                                        width, in, workspace_, nullptr, plan));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));
        const auto fused = test::download(d_fused, DType::bf16, n);
        EXPECT_EQ(differing_bits(fused, test::download(d_unfused, DType::bf16, n)), 0u)
            << "elements differing from the unfused";
        std::vector<float> gate_up(2 * n), want(n);
        cpu::linear(o.x.data(), o.w_bits.data(), DType::bf16, gate_up.data(), m, 2 * width, in);
        for (float& v : gate_up) v = test::stored_value(v, DType::bf16);
        cpu::silu_and_mul(gate_up.data(), want.data(), m, width);
        test::expect_close(fused, want, test::tolerance(DType::bf16), "out");
      }
  }
}

}  // namespace
}  // namespace minivllm
