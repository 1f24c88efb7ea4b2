// The conversion kernels against the CPU reference (kernels/bf16.hpp), bit for bit, on fresh
// random inputs with poisoned outputs. Skips, saying why, where no CUDA device is usable.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16.hpp"
#include "kernels/cuda/convert.cuh"
#include "gpu_test_support.hpp"

namespace minivllm {
namespace {

using test::DeviceBuffer;

class ConvertKernel : public test::CudaKernelTest {};

TEST_F(ConvertKernel, F32ToBf16MatchesReference) {
  std::uniform_int_distribution<std::uint32_t> bits;
  for (std::size_t n : {std::size_t{1}, std::size_t{255}, (std::size_t{1} << 24) + 7}) {
    std::vector<float> in(n);
    for (float& x : in) x = bits_float(bits(rng()));  // every exponent: subnormals, inf, NaN too
    DeviceBuffer d_in = test::upload_raw(in);
    DeviceBuffer d_out(n * sizeof(std::uint16_t));
    test::poison(d_out);
    ASSERT_CUDA(cuda::launch_f32_to_bf16(d_in.as<float>(), d_out.as<std::uint16_t>(),
                                         static_cast<std::int64_t>(n), nullptr));
    ASSERT_CUDA(cudaStreamSynchronize(nullptr));
    std::vector<std::uint16_t> out(n);
    ASSERT_CUDA(cudaMemcpy(out.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f32_to_bf16(in[i])) << "n=" << n << " i=" << i << " x=" << in[i];
  }
}

TEST_F(ConvertKernel, Bf16ToF32IsExactForEveryPattern) {
  const std::size_t n = 65536;
  std::vector<std::uint16_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint16_t>(i);
  DeviceBuffer d_in = test::upload_raw(in);
  DeviceBuffer d_out(n * sizeof(float));
  test::poison(d_out);
  ASSERT_CUDA(cuda::launch_bf16_to_f32(d_in.as<std::uint16_t>(), d_out.as<float>(),
                                       static_cast<std::int64_t>(n), nullptr));
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  std::vector<float> out(n);
  ASSERT_CUDA(cudaMemcpy(out.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(float_bits(out[i]), std::uint32_t(i) << 16) << i;
}

}  // namespace
}  // namespace minivllm
