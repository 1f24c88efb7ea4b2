#pragma once
// Shared by the CUDA kernel tests: a fixture that skips (saying why) where no CUDA device is
// usable, device buffers, random inputs as the GPU stores them, poisoned outputs, and the
// comparison with the CPU reference. Inputs are fresh random values each run; the seed is printed
// to rerun a failure (MINIVLLM_TEST_SEED=<seed>).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <minivllm/dtype.hpp>

#include "kernels/bf16.hpp"

#define ASSERT_CUDA(call)                                                     \
  do {                                                                        \
    const cudaError_t err_ = (call);                                          \
    ASSERT_EQ(err_, cudaSuccess) << #call << ": " << cudaGetErrorString(err_); \
  } while (0)

namespace minivllm::test {

inline void throw_on_cuda_error(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

// cudaMalloc'd bytes, freed on destruction. Throws when the allocation fails.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    throw_on_cuda_error(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(other.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() { cudaFree(ptr_); }

  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A device copy of a host array of plain values (ids, slots, block tables).
template <class T>
DeviceBuffer upload_raw(const std::vector<T>& values) {
  DeviceBuffer buf(values.size() * sizeof(T));
  throw_on_cuda_error(cudaMemcpy(buf.get(), values.data(), buf.bytes(), cudaMemcpyHostToDevice),
                      "cudaMemcpy to device");
  return buf;
}

// The first n elements of a device array of T, as they are.
template <class T>
std::vector<T> download_raw(const DeviceBuffer& buf, std::size_t n) {
  std::vector<T> out(n);
  throw_on_cuda_error(cudaMemcpy(out.data(), buf.get(), n * sizeof(T), cudaMemcpyDeviceToHost),
                      "cudaMemcpy to host");
  return out;
}

// x as `dtype` stores it: bf16 rounds to nearest even, f32 keeps it.
inline float stored_value(float x, DType dtype) {
  return dtype == DType::bf16 ? bf16_to_f32(f32_to_bf16(x)) : x;
}

// A device array of `dtype` (bf16 or f32) holding `values` (which should already be stored values).
inline DeviceBuffer upload(const std::vector<float>& values, DType dtype) {
  if (dtype == DType::f32) return upload_raw(values);
  std::vector<std::uint16_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  return upload_raw(bits);
}

// The first n elements of a device array of `dtype`, as f32.
inline std::vector<float> download(const DeviceBuffer& buf, DType dtype, std::size_t n) {
  std::vector<float> out(n);
  if (dtype == DType::f32) {
    throw_on_cuda_error(
        cudaMemcpy(out.data(), buf.get(), n * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy to host");
    return out;
  }
  std::vector<std::uint16_t> bits(n);
  throw_on_cuda_error(
      cudaMemcpy(bits.data(), buf.get(), n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost),
      "cudaMemcpy to host");
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(bits[i]);
  return out;
}

// Fills a buffer with 0xFF bytes: NaN in bf16 and f32, so an element a kernel never wrote shows.
inline void poison(DeviceBuffer& buf) {
  throw_on_cuda_error(cudaMemset(buf.get(), 0xFF, buf.bytes()), "cudaMemset");
}

// Relative tolerance of an output stored in `dtype` against the fp32 CPU reference.
inline float tolerance(DType dtype) { return dtype == DType::bf16 ? 1e-2f : 1e-4f; }
// The same for the bf16 flash prefill kernel, twice bf16's: it rounds the softmax weights to bf16
// for P V, so with a few keys whose values cancel an output moves by up to ~2^-8 of the values'
// spread, past 1 % in ~1 of 15-30 ragged batches (H200, 2026-11-30: 1 of 1.76 M elements at 1.02 %;
// H100, 2026-12-06: 1 of 2.6 M at 1.03 %).
inline float flash_tolerance(DType dtype) {
  return dtype == DType::bf16 ? 2 * tolerance(dtype) : tolerance(dtype);
}

// Fails unless every got[i] is within tol * (|ref[i]| + rms(ref)) of ref[i]; a NaN in got where
// ref has none (an element the kernel left poisoned) fails too. Reports the first element off and
// the worst relative error.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref, float tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double sum_squares = 0.0;
  for (float r : ref)
    if (!std::isnan(r)) sum_squares += double{r} * r;
  const double rms = ref.empty() ? 0.0 : std::sqrt(sum_squares / static_cast<double>(ref.size()));
  std::size_t bad = 0, first_bad = 0;
  double worst = 0.0;  // over the elements with a finite error
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(ref[i])) continue;
    const double scale = std::fabs(double{ref[i]}) + rms;
    const double err = std::fabs(double{got[i]} - ref[i]) / (scale > 0 ? scale : 1.0);
    if (!(err <= tol) && bad++ == 0) first_bad = i;  // a NaN error fails too
    if (!std::isnan(err)) worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << ref.size() << " elements off; first at "
                     << first_bad << ": got " << got[first_bad] << ", want " << ref[first_bad]
                     << "; worst relative error " << worst << " (tolerance " << tol << ")";
}

// Base fixture of every CUDA kernel test: skips without a usable device, and gives each test a
// fresh random generator (seed from MINIVLLM_TEST_SEED when set).
class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0)
      GTEST_SKIP() << "no CUDA device: "
                   << (err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
    const char* fixed = std::getenv("MINIVLLM_TEST_SEED");
    seed_ = fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
    std::printf("seed %llu (rerun with MINIVLLM_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_));
  }

  // n uniform values in [lo, hi), as `dtype` stores them.
  std::vector<float> random_values(std::size_t n, float lo, float hi, DType dtype) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = stored_value(dist(rng_), dtype);
    return v;
  }

  // A uniform integer in [lo, hi].
  std::int64_t random_int(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// The storage types every kernel supports, for tests to loop over.
inline constexpr DType kElementTypes[] = {DType::bf16, DType::f32};

}  // namespace minivllm::test
