#include "kernels/cuda/attention_inputs.cuh"

#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kWarpsPerBlock = 4;
constexpr std::int64_t kMaxHeadDim = 128;
constexpr int kPairsPerLane = kMaxHeadDim / 2 / 32;

// Normalizes (optionally) and rotates one head vector src [head_dim] into dst with one warp: the
// lane holds the pairs (i, i + half) for i = lane + 32 j.
template <class T>
__device__ void rotate_head(const T* src, T* dst, const T* norm_weight, float eps,
                            std::int32_t position, const float* inv_freq, int head_dim) {
  const int lane = threadIdx.x % 32, half = head_dim / 2;
  float a[kPairsPerLane], b[kPairsPerLane];
  float sum_squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kPairsPerLane; ++j) {
    const int i = lane + 32 * j;
    a[j] = i < half ? to_float(src[i]) : 0.0f;
    b[j] = i < half ? to_float(src[i + half]) : 0.0f;
    sum_squares += a[j] * a[j] + b[j] * b[j];
  }
  if (norm_weight != nullptr) {
    const float inv_rms =
        rsqrtf(detail::warp_sum(sum_squares) / static_cast<float>(head_dim) + eps);
#pragma unroll
    for (int j = 0; j < kPairsPerLane; ++j) {
      const int i = lane + 32 * j;
      if (i >= half) continue;
      a[j] *= inv_rms * to_float(norm_weight[i]);
      b[j] *= inv_rms * to_float(norm_weight[i + half]);
    }
  }
#pragma unroll
  for (int j = 0; j < kPairsPerLane; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) continue;
    float sin_angle, cos_angle;
    sincosf(static_cast<float>(position) * inv_freq[i], &sin_angle, &cos_angle);
    dst[i] = from_float<T>(a[j] * cos_angle - b[j] * sin_angle);
    dst[i + half] = from_float<T>(b[j] * cos_angle + a[j] * sin_angle);
  }
}

// One warp per head vector of a qkv row: its num_heads q heads (normed, rotated, to q), then its
// num_kv_heads k heads (normed, rotated, to the key cache), then its v heads (copied to the value
// cache). Tokens whose slot is padding only produce q.
template <class T>
__global__ void attention_inputs_kernel(AttentionInputsParams p) {
  const std::int64_t heads_per_token = p.num_heads + 2 * p.num_kv_heads;
  const std::int64_t vector = blockIdx.x * std::int64_t{kWarpsPerBlock} + threadIdx.x / 32;
  if (vector >= p.num_tokens * heads_per_token) return;  // whole warps exit
  const std::int64_t token = vector / heads_per_token, head = vector % heads_per_token;
  const int head_dim = static_cast<int>(p.head_dim);
  const T* src = static_cast<const T*>(p.qkv) + vector * head_dim;
  if (head < p.num_heads) {
    T* dst = static_cast<T*>(p.q) + (token * p.num_heads + head) * head_dim;
    rotate_head(src, dst, static_cast<const T*>(p.q_norm_weight), p.norm_eps, p.positions[token],
                p.inv_freq, head_dim);
    return;
  }
  const std::int64_t slot = p.slot_mapping[token];
  if (slot < 0 || slot >= p.num_slots) return;
  const std::int64_t kv_head = (head - p.num_heads) % p.num_kv_heads;
  const std::int64_t dst_offset = (slot * p.num_kv_heads + kv_head) * head_dim;
  if (head < p.num_heads + p.num_kv_heads) {
    rotate_head(src, static_cast<T*>(p.key_cache) + dst_offset,
                static_cast<const T*>(p.k_norm_weight), p.norm_eps, p.positions[token],
                p.inv_freq, head_dim);
  } else {
    T* dst = static_cast<T*>(p.value_cache) + dst_offset;
    for (int i = threadIdx.x % 32; i < head_dim; i += 32) dst[i] = src[i];
  }
}

}  // namespace

cudaError_t launch_attention_inputs(const AttentionInputsParams& p, cudaStream_t stream) {
  if (p.num_tokens < 0 || p.num_heads < 0 || p.num_kv_heads < 0 || p.num_slots < 0 ||
      p.head_dim < 2 || p.head_dim > kMaxHeadDim || p.head_dim % 2 != 0)
    return cudaErrorInvalidValue;
  const std::int64_t vectors = p.num_tokens * (p.num_heads + 2 * p.num_kv_heads);
  if (vectors == 0) return cudaSuccess;
  const std::int64_t blocks = (vectors + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > detail::kMaxGridX || p.qkv == nullptr || p.positions == nullptr ||
      p.inv_freq == nullptr || (p.num_heads > 0 && p.q == nullptr) ||
      (p.num_kv_heads > 0 &&
       (p.slot_mapping == nullptr || p.key_cache == nullptr || p.value_cache == nullptr)))
    return cudaErrorInvalidValue;
  return detail::dispatch_element_type(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    attention_inputs_kernel<T>
        <<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
