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
  // One element; Qwen3-0.6B's intermediate size (3072) over a ragged token count; and more
  // elements than the grid's blocks cover in one pass.
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{1, 1}, {37, 3072}, {4099, 4096}};
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

}  // namespace
}  // namespace minivllm
