#pragma once
// A q or k head's RMSNorm (Qwen3's q_norm / k_norm) and neox-style RoPE over one lane's share of
// the head: kElems elements of its first half (a) and the matching elements of its second half
// (b). attention_inputs and the decode kernel's fused inputs both use these, so the keys and
// queries they make are the same bits. Included by .cu files only.
#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

// sum plus the squares of the lane's elements (its part of the RMS norm's sum).
template <int kElems>
__device__ __forceinline__ float add_squares(float sum, const float (&a)[kElems],
                                             const float (&b)[kElems]) {
#pragma unroll
  for (int e = 0; e < kElems; ++e) sum += a[e] * a[e] + b[e] * b[e];
  return sum;
}

// 1 / RMS of a head from the sum of its squares.
__device__ __forceinline__ float inverse_rms(float sum_squares, int head_dim, float eps) {
  return rsqrtf(sum_squares / static_cast<float>(head_dim) + eps);
}

// x *= inv_rms * weight, elementwise.
template <int kElems>
__device__ __forceinline__ void scale_by_norm(float (&x)[kElems], float inv_rms,
                                              const float (&weight)[kElems]) {
#pragma unroll
  for (int e = 0; e < kElems; ++e) x[e] *= inv_rms * weight[e];
}

// (a, b) rotated by the angles: a' = a cos - b sin, b' = b cos + a sin.
template <int kElems>
__device__ __forceinline__ void rotate_halves(float (&a)[kElems], float (&b)[kElems],
                                              const float (&cos_angle)[kElems],
                                              const float (&sin_angle)[kElems]) {
#pragma unroll
  for (int e = 0; e < kElems; ++e) {
    const float rotated_a = a[e] * cos_angle[e] - b[e] * sin_angle[e];
    const float rotated_b = b[e] * cos_angle[e] + a[e] * sin_angle[e];
    a[e] = rotated_a;
    b[e] = rotated_b;
  }
}

}  // namespace minivllm::cuda::detail
