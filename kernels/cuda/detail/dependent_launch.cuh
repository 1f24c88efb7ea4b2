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

// kernel<<<grid, block, shared_bytes, stream>>>(args...) with `count` launch attributes.
template <class... Params, class... Args>
cudaError_t launch_with(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
                        cudaStream_t stream, cudaLaunchAttribute* attributes, unsigned count,
                        Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

inline cudaLaunchAttribute dependent_launch_attribute() {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  return attribute;
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), allowed to start before the previous
// kernel on `stream` ends (see above). Returns the launch's error.
template <class... Params, class... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block,
                             std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attributes[1] = {dependent_launch_attribute()};
  return launch_with(kernel, grid, block, shared_bytes, stream, attributes, 1,
                     std::forward<Args>(args)...);
}

// The same in thread-block clusters of `cluster` blocks (which must divide `grid`; more than 8
// needs the kernel's cudaFuncAttributeNonPortableClusterSizeAllowed).
template <class... Params, class... Args>
cudaError_t launch_dependent_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster,
                                         dim3 block, std::size_t shared_bytes,
                                         cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attributes[2] = {dependent_launch_attribute(), {}};
  attributes[1].id = cudaLaunchAttributeClusterDimension;
  attributes[1].val.clusterDim.x = cluster.x;
  attributes[1].val.clusterDim.y = cluster.y;
  attributes[1].val.clusterDim.z = cluster.z;
  return launch_with(kernel, grid, block, shared_bytes, stream, attributes, 2,
                     std::forward<Args>(args)...);
}

}  // namespace minivllm::cuda::detail
