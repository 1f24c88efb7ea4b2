#pragma once
// Facts of the current device that launchers size their grids by.
#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

// The current device's SM count into `count`.
inline cudaError_t current_sm_count(int& count) {
  int device = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
  return cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
}

}  // namespace minivllm::cuda::detail
