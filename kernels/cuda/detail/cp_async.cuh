#pragma once
// Asynchronous 16-byte copies from global to shared memory (sm_80+ cp.async): a thread queues
// loads into a shared-memory ring, keeps computing, and waits only for the oldest group. The
// copies bypass L1 (.cg): streamed data is read once. Included by .cu files only.
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

// Queues a 16-byte copy src -> dst (both 16-byte aligned); when !valid, dst gets zeros and src is
// not read (any address will do).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const auto smem = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// Closes the group of copies queued since the last commit (an empty group is fine).
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

}  // namespace minivllm::cuda::detail
