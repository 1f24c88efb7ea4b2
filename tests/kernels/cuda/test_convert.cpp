// The conversion kernels against the CPU reference (kernels/bf16.hpp), bit for bit, on fresh
// random inputs with poisoned outputs. Skips, saying why, where no CUDA device is usable.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16.hpp"
#include "kernels/cuda/convert.cuh"

namespace minivllm {
namespace {

#define ASSERT_CUDA(call)                                                 \
  do {                                                                    \
    cudaError_t err_ = (call);                                            \
    ASSERT_EQ(err_, cudaSuccess) << #call << ": " << cudaGetErrorString(err_); \
  } while (0)

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(std::size_t n) {
    void* p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) == cudaSuccess) ptr = static_cast<T*>(p);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
};

class ConvertKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0)
      GTEST_SKIP() << "no CUDA device: "
                   << (err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
  }
};

TEST_F(ConvertKernel, F32ToBf16MatchesReference) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::uint32_t> bits;
  for (std::size_t n : {std::size_t{1}, std::size_t{255}, (std::size_t{1} << 24) + 7}) {
    std::vector<float> in(n);
    for (float& x : in) x = bits_float(bits(rng));  // every exponent: subnormals, inf, NaN too
    DeviceBuffer<float> d_in(n);
    DeviceBuffer<std::uint16_t> d_out(n);
    ASSERT_NE(d_in.ptr, nullptr);
    ASSERT_NE(d_out.ptr, nullptr);
    ASSERT_CUDA(cudaMemcpy(d_in.ptr, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(d_out.ptr, 0xA5, n * sizeof(std::uint16_t)));  // poison
    ASSERT_CUDA(cuda::launch_f32_to_bf16(d_in.ptr, d_out.ptr, static_cast<std::int64_t>(n), nullptr));
    ASSERT_CUDA(cudaStreamSynchronize(nullptr));
    std::vector<std::uint16_t> out(n);
    ASSERT_CUDA(cudaMemcpy(out.data(), d_out.ptr, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f32_to_bf16(in[i])) << "n=" << n << " i=" << i << " x=" << in[i];
  }
}

TEST_F(ConvertKernel, Bf16ToF32IsExactForEveryPattern) {
  const std::size_t n = 65536;
  std::vector<std::uint16_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint16_t>(i);
  DeviceBuffer<std::uint16_t> d_in(n);
  DeviceBuffer<float> d_out(n);
  ASSERT_NE(d_in.ptr, nullptr);
  ASSERT_NE(d_out.ptr, nullptr);
  ASSERT_CUDA(cudaMemcpy(d_in.ptr, in.data(), n * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(d_out.ptr, 0xA5, n * sizeof(float)));
  ASSERT_CUDA(cuda::launch_bf16_to_f32(d_in.ptr, d_out.ptr, static_cast<std::int64_t>(n), nullptr));
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  std::vector<float> out(n);
  ASSERT_CUDA(cudaMemcpy(out.data(), d_out.ptr, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(float_bits(out[i]), std::uint32_t(i) << 16) << i;
}

}  // namespace
}  // namespace minivllm
