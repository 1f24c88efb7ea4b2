#pragma once
// Facts of the current device that launchers size their grids by.
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

// An attribute of the current device into `value`.
inline cudaError_t current_device_attribute(cudaDeviceAttr attribute, int& value) {
  int device = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
  return cudaDeviceGetAttribute(&value, attribute, device);
}

// The current device's SM count into `count`.
inline cudaError_t current_sm_count(int& count) {
  return current_device_attribute(cudaDevAttrMultiProcessorCount, count);
}

// Threads the current device holds at once (SMs x threads per SM) into `count`.
inline cudaError_t current_resident_threads(std::int64_t& count) {
  int sms = 0, per_sm = 0;
  if (const cudaError_t err = current_sm_count(sms); err != cudaSuccess) return err;
  if (const cudaError_t err =
          current_device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, per_sm);
      err != cudaSuccess)
    return err;
  count = std::int64_t{sms} * per_sm;
  return cudaSuccess;
}

}  // namespace minivllm::cuda::detail
