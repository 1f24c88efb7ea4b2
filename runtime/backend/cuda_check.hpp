#pragma once
// Error checking for CUDA runtime and cuBLAS calls: a failure throws minivllm::Error naming the
// call and where it was made, so a GPU fault points at its op instead of a later sync.
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <minivllm/error.hpp>

namespace minivllm::cuda {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ") in " + call + " at " + file + ":" +
                std::to_string(line));
}

inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
                cublasGetStatusString(status) + ") in " + call + " at " + file + ":" +
                std::to_string(line));
}

}  // namespace minivllm::cuda

// Checks one CUDA runtime or cuBLAS call: MV_CUDA_CHECK(cudaMemcpyAsync(...)).
#define MV_CUDA_CHECK(call) ::minivllm::cuda::check((call), #call, __FILE__, __LINE__)
