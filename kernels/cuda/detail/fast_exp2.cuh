#pragma once
// 2^x in one instruction (MUFU.EX2): exp2f adds a range check and two multiplies around it to keep
// results below 2^-126, which softmax weights in [0, 1] do not need. Included by .cu files only.

namespace minivllm::cuda::detail {

// 2^x, approximate (2 ulp), flushing denormals; 2^-inf = 0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace minivllm::cuda::detail
