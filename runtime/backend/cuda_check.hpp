#pragma once
// Error checking for CUDA runtime and cuBLAS calls: a failure throws minivllm::Error naming the
// call and where it was made, so a GPU fault points at its op instead of a later sync. An error
// that poisons the context throws minivllm::DeviceLost instead.
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <minivllm/error.hpp>

namespace minivllm::cuda {

// The errors after which every later call in the process fails the same way (CUDA's runtime API
// documentation of each: "the process must be terminated and relaunched").
inline bool poisons_context(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

inline std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

// The error that lost the context, found after a call failed with `status`; cudaSuccess if the
// context is not lost. A call into a lost context may report another error (a kernel launch
// after an illegal address gave cudaErrorInvalidValue), so a failure that does not name a lost
// context asks a synchronize, which reports the sticky error. Only failures pay for it.
inline cudaError_t lost_context_error(cudaError_t status) {
  if (poisons_context(status)) return status;
  const cudaError_t sticky = cudaDeviceSynchronize();
  return poisons_context(sticky) ? sticky : cudaSuccess;
}

// Throws Error for `what`, or DeviceLost when `lost` (lost_context_error's answer) names an error,
// saying which when `what` does not.
[[noreturn]] inline void fail(const std::string& what, cudaError_t lost, cudaError_t reported) {
  if (lost == cudaSuccess) throw Error(what);
  throw DeviceLost(what + "; the CUDA context is lost" +
                   (lost == reported ? std::string() : " (" + describe(lost) + ")"));
}

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail("CUDA error " + describe(status) + " in " + call + " at " + file + ":" +
             std::to_string(line),
         lost_context_error(status), status);
}

// cuBLAS reports a lost context as its own failure.
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
             cublasGetStatusString(status) + ") in " + call + " at " + file + ":" +
             std::to_string(line),
         lost_context_error(cudaPeekAtLastError()), cudaSuccess);
}

}  // namespace minivllm::cuda

// Checks one CUDA runtime or cuBLAS call: MV_CUDA_CHECK(cudaMemcpyAsync(...)).
#define MV_CUDA_CHECK(call) ::minivllm::cuda::check((call), #call, __FILE__, __LINE__)
