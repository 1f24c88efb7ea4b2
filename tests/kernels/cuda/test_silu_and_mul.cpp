// SiLU-and-multiply against the CPU reference (kernels/cpu/activation.hpp).
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cuda/activation.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

class SiluAndMulKernel : public test::CudaKernelTest {};

TEST_F(SiluAndMulKernel, MatchesReference) {
  // One element; Qwen3-0.6B's intermediate size (3072) over a ragged token count; many rows;
  // rows of 3 (bf16) or 6 (f32) 16-byte vectors; a width of no whole vectors with more elements
  // than the grid's blocks cover in one pass (the scalar kernel's grid-stride loop).
  const std::pair<std::int64_t, std::int64_t> sizes[] = {
      {1, 1}, {37, 3072}, {4099, 4096}, {5, 24}, {4099, 4097}};
  for (const auto& [rows, width] : sizes) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) + " width " +
                   std::to_string(width));
      const auto size = static_cast<std::size_t>(rows * width);
      const auto gate_up = random_values(2 * size, -8, 8, dtype);
      DeviceBuffer d_gate_up = test::upload(gate_up, dtype);
      DeviceBuffer d_out(size * dtype_size(dtype));
      test::poison(d_out);
      ASSERT_CUDA(
          cuda::launch_silu_and_mul(dtype, d_gate_up.get(), d_out.get(), rows, width, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      std::vector<float> want(size);
      cpu::silu_and_mul(gate_up.data(), want.data(), rows, width);
      test::expect_close(test::download(d_out, dtype, size), want, test::tolerance(dtype), "out");
    }
  }
}

// gate_up and out one element past a 16-byte boundary take the scalar kernel.
TEST_F(SiluAndMulKernel, UnalignedMatchesReference) {
  const std::int64_t rows = 3, width = 3072;
  for (DType dtype : test::kElementTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto size = static_cast<std::size_t>(rows * width);
    const auto gate_up = random_values(2 * size + 1, -8, 8, dtype);
    DeviceBuffer d_gate_up = test::upload(gate_up, dtype);
    DeviceBuffer d_out((size + 1) * dtype_size(dtype));
    test::poison(d_out);
    const std::size_t one = dtype_size(dtype);
    ASSERT_CUDA(cuda::launch_silu_and_mul(dtype, d_gate_up.as<char>() + one,
                                          d_out.as<char>() + one, rows, width, nullptr));
    ASSERT_CUDA(cudaStreamSynchronize(nullptr));
    std::vector<float> want(size);
    cpu::silu_and_mul(gate_up.data() + 1, want.data(), rows, width);
    auto got = test::download(d_out, dtype, size + 1);
    got.erase(got.begin());
    test::expect_close(got, want, test::tolerance(dtype), "out");
  }
}

}  // namespace
}  // namespace minivllm
