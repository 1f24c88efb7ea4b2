// SiLU-and-multiply against the CPU reference (kernels/cpu/activation.hpp).
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
  // One element, Qwen3-0.6B's intermediate size (3072) times a ragged token count, and more
  // elements than the grid's blocks cover in one pass.
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{3072 * 37}, std::int64_t{(1 << 24) + 5}}) {
    for (DType dtype : test::kElementTypes) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) +
                     (in_place ? " out = gate" : ""));
        const auto size = static_cast<std::size_t>(n);
        const auto gate = random_values(size, -8, 8, dtype);
        const auto up = random_values(size, -2, 2, dtype);
        DeviceBuffer d_gate = test::upload(gate, dtype);
        DeviceBuffer d_up = test::upload(up, dtype);
        DeviceBuffer d_out(size * dtype_size(dtype));
        test::poison(d_out);
        DeviceBuffer& out = in_place ? d_gate : d_out;
        ASSERT_CUDA(
            cuda::launch_silu_and_mul(dtype, d_gate.get(), d_up.get(), out.get(), n, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));
        std::vector<float> want(size);
        cpu::silu_and_mul(gate.data(), up.data(), want.data(), n);
        test::expect_close(test::download(out, dtype, size), want, test::tolerance(dtype), "out");
      }
    }
  }
}

}  // namespace
}  // namespace minivllm
