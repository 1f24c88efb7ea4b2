#pragma once
// What the GPU benchmark programs share: exit with the failing call's name on a CUDA or cuBLAS
// error, device memory that frees itself, and the median time of a body timed with CUDA events
// after warm-up.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace minivllm::bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
                 cudaGetErrorString(e));
    std::exit(1);
  }
}

inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s: cuBLAS status %d\n", program_invocation_short_name, what,
                 static_cast<int>(s));
    std::exit(1);
  }
}

// Device memory, freed on destruction.
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) { check(cudaMalloc(&ptr_, bytes), "cudaMalloc"); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { cudaFree(ptr_); }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// Median milliseconds of `reps` timed runs of `body` after `warmup` untimed ones, on the default
// stream. A body taking an int gets the call's index (warm-up calls first), e.g. to rotate inputs.
template <class Body>
float median_ms(int warmup, int reps, Body body) {
  const auto call = [&](int i) {
    if constexpr (std::is_invocable_v<Body&, int>) body(i);
    else body();
  };
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) call(i);
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    call(warmup + i);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

}  // namespace minivllm::bench
