#pragma once
// Shared-memory addresses and mbarrier waits for the benchmarks' bulk-copy kernels
// (gpu_l2_intake_bench, gpu_mlp_stream_bench). Included by .cu files only.
#include <cstdint>

#include <cuda_runtime.h>

namespace minivllm::bench {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Spins until the mbarrier at shared address `bar` has completed its phase of this parity.
__device__ __forceinline__ void wait_parity(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}

}  // namespace minivllm::bench
