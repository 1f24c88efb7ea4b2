// The bias add against the CPU reference (kernels/cpu/bias.hpp), on fresh random inputs.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/bias.hpp"
#include "kernels/cuda/bias.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

class BiasKernel : public test::CudaKernelTest {};

TEST_F(BiasKernel, MatchesReference) {
  // One element; tiny-qwen2's fused q/k/v width (128) over a few tokens; Qwen2-7B's (4608) over
  // more rows than the grid covers in one pass.
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{1, 1}, {7, 128}, {4099, 4608}};
  for (const auto& [rows, cols] : sizes) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) + " cols " +
                   std::to_string(cols));
      const auto size = static_cast<std::size_t>(rows * cols);
      std::vector<float> x = random_values(size, -4, 4, dtype);
      const std::vector<float> bias = random_values(static_cast<std::size_t>(cols), -1, 1, dtype);
      DeviceBuffer d_x = test::upload(x, dtype);
      DeviceBuffer d_bias = test::upload(bias, dtype);
      ASSERT_CUDA(cuda::launch_add_bias(dtype, d_x.get(), d_bias.get(), rows, cols, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      cpu::add_bias(x.data(), bias.data(), DType::f32, rows, cols);
      test::expect_close(test::download(d_x, dtype, size), x, test::tolerance(dtype), "x");
    }
  }
}

}  // namespace
}  // namespace minivllm
