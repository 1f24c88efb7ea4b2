#pragma once
// The gated MLP's activation of one element, shared by silu_and_mul and the skinny GEMM's fused
// epilogue so that both give the same bits: explicitly rounded operations, which the compiler
// never contracts into an FMA whatever the surrounding code.
#include <cuda_runtime.h>

namespace minivllm::cuda::detail {

// silu(gate) * up = gate / (1 + exp(-gate)) * up, in fp32.
__device__ __forceinline__ float silu_times(float gate, float up) {
  return __fmul_rn(__fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate))), up);
}

}  // namespace minivllm::cuda::detail
