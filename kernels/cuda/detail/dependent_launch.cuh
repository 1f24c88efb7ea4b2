#pragma once
// Programmatic dependent launch (sm_90+): a kernel launched by launch_dependent() may be scheduled
// while the kernel before it on the stream is still running its last blocks, so its launch and
// block start-up overlap that kernel's tail instead of following it (inside a CUDA graph too:
// capture keeps the relation). In return the kernel must call wait_for_prior_grids() in every
// block, before it reads what earlier kernels wrote, writes what they read, or returns: the wait
// ends when the previous kernel has completed and its writes are visible, and since that kernel
// waited in turn, so have all before it. Kernels call allow_dependents() after their wait to let
// the next kernel start launching. Older GPUs compile both calls to nothing and run the launch
// as an ordinary one.
#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

namespace minivllm::cuda::detail {

__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), allowed to start before the previous
// kernel on `stream` ends (see above). Returns the launch's error.
template <class... Params, class... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block,
                             std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace minivllm::cuda::detail
