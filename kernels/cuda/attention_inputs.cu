#include "kernels/cuda/attention_inputs.cuh"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/fp8.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::kVecElems;
using detail::Packet;
using detail::to_float;

constexpr int kWarpsPerBlock = 4;
constexpr std::int64_t kMaxHeadDim = 128;
// Warps per SM the launcher aims for: below that many tokens per SM, a token's heads are spread
// over several warps.
constexpr std::int64_t kTargetWarpsPerSm = 16;

// A token's head vectors are shared among lane groups of `group_lanes` lanes (one or more warps
// per token). In each half of a head a lane holds kChunks packets of kElems elements, at packet
// rank + group_lanes * c; element i of the first half pairs with i + head_dim / 2. The cosines
// and sines of a lane's angles depend on the token only, so each lane loads them once for all the
// heads it rotates. Per q or k head: RMS-normalize with the norm weight (when given), rotate,
// store to q or the key cache; per v head: copy to the value cache. Tokens whose slot is padding
// only produce q. kFp8: the caches hold e4m3 codes, each k and v head scaled by the power of two
// of its largest |element| (reduced over the head's lanes), the scale stored by its first lane.
// 6 blocks per SM caps registers at 80 without spills (96 uncapped: 5 blocks).
template <class T, int kElems, int kChunks, bool kFp8>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, 6)
    attention_inputs_kernel(AttentionInputsParams p, int group_lanes, int warps_per_token) {
  using Unit = Packet<T, kElems>;
  const std::int64_t warp = blockIdx.x * std::int64_t{blockDim.x / 32} + threadIdx.x / 32;
  const std::int64_t token = warp / warps_per_token;
  const bool has_token = token < p.num_tokens;
  const int lane = threadIdx.x % 32, rank = lane % group_lanes;
  const int groups_per_warp = 32 / group_lanes;
  const int group = static_cast<int>(warp % warps_per_token) * groups_per_warp + lane / group_lanes;
  const int groups = warps_per_token * groups_per_warp;
  const int head_dim = static_cast<int>(p.head_dim), half = head_dim / 2;
  const int half_packets = half / kElems;
  const int heads = static_cast<int>(p.num_heads), kv_heads = static_cast<int>(p.num_kv_heads);
  const int heads_per_token = heads + 2 * kv_heads;

  // The step's slots (uploaded before its kernels) depend on no kernel: they load while the
  // kernel before this one finishes. The angles are a kernel's output: after the wait, beside
  // the head's loads.
  const std::int64_t slot = has_token && kv_heads > 0 ? p.slot_mapping[token] : -1;
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  if (!has_token) return;  // whole warps exit
  const bool cache_kv = slot >= 0 && slot < p.num_slots;
  float cos_angle[kChunks][kElems], sin_angle[kChunks][kElems];
  const float* token_angles = p.rotary + token * head_dim;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int packet = rank + group_lanes * c;
#pragma unroll
    for (int e = 0; e < kElems; ++e) {
      const bool in_half = packet < half_packets;
      cos_angle[c][e] = in_half ? token_angles[packet * kElems + e] : 0.0f;
      sin_angle[c][e] = in_half ? token_angles[half + packet * kElems + e] : 0.0f;
    }
  }

  const Unit* token_src =
      static_cast<const Unit*>(p.qkv) + token * heads_per_token * 2 * half_packets;
  // Heads ascend, and past the q heads a group without a cache slot has nothing left to do.
  for (int head = group; head < heads_per_token && (head < heads || cache_kv); head += groups) {
    const bool is_q = head < heads;
    const Unit* norm_weight = static_cast<const Unit*>(is_q ? p.q_norm_weight : p.k_norm_weight);
    const bool normed = norm_weight != nullptr && head < heads + kv_heads;
    // The head's and its norm weight's loads together.
    const Unit* src = token_src + head * 2 * half_packets;
    Unit first[kChunks], second[kChunks], weight_first[kChunks], weight_second[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int packet = rank + group_lanes * c;
      if (packet >= half_packets) continue;
      first[c] = src[packet];
      second[c] = src[half_packets + packet];
      if (normed) {
        weight_first[c] = norm_weight[packet];
        weight_second[c] = norm_weight[half_packets + packet];
      }
    }
    const std::int64_t kv_head = head - heads - (head >= heads + kv_heads ? kv_heads : 0);
    const std::int64_t cache_offset = (slot * kv_heads + kv_head) * 2 * half_packets;
    // The head's values (already rotated for a k head) into an fp8 cache.
    const auto store_fp8 = [&](const float (&x)[kChunks][kElems], const float (&y)[kChunks][kElems],
                               void* cache, std::uint8_t* scales) {
      float amax = 0.0f;
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int e = 0; e < kElems; ++e) amax = fmaxf(amax, fmaxf(fabsf(x[c][e]), fabsf(y[c][e])));
      const float scale = detail::e4m3_head_scale(detail::lane_group_max(amax, group_lanes));
      const float inverse = 1.0f / scale;  // exact: a power of two
      auto* codes = static_cast<std::uint8_t*>(cache) + cache_offset * kElems;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int packet = rank + group_lanes * c;
        if (packet >= half_packets) continue;
        detail::store_e4m3<kElems>(codes + packet * kElems, x[c], inverse);
        detail::store_e4m3<kElems>(codes + (half_packets + packet) * kElems, y[c], inverse);
      }
      if (rank == 0)  // dividing in 32 bits: the host checks num_slots
        scales[fp8_slot_scale_index(static_cast<std::uint32_t>(slot), kv_head, kv_heads,
                                    p.block_size)] = e8m0_from_scale(scale);
    };
    if (kFp8 && head >= heads + kv_heads) {  // a v head, quantized
      float x[kChunks][kElems] = {}, y[kChunks][kElems] = {};
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        if (rank + group_lanes * c >= half_packets) continue;
        detail::unpack<T, kElems>(first[c], x[c]);
        detail::unpack<T, kElems>(second[c], y[c]);
      }
      store_fp8(x, y, p.value_cache, p.value_scales);
      continue;
    }
    if (head >= heads + kv_heads) {  // a v head
      Unit* dst = static_cast<Unit*>(p.value_cache) + cache_offset;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int packet = rank + group_lanes * c;
        if (packet < half_packets) {
          dst[packet] = first[c];
          dst[half_packets + packet] = second[c];
        }
      }
      continue;
    }
    float a[kChunks][kElems] = {}, b[kChunks][kElems] = {};
    float sum_squares = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (rank + group_lanes * c >= half_packets) continue;
      detail::unpack<T, kElems>(first[c], a[c]);
      detail::unpack<T, kElems>(second[c], b[c]);
#pragma unroll
      for (int e = 0; e < kElems; ++e) sum_squares += a[c][e] * a[c][e] + b[c][e] * b[c][e];
    }
    if (normed) {
      const float inv_rms =
          rsqrtf(detail::lane_group_sum(sum_squares, group_lanes) / static_cast<float>(head_dim) +
                 p.norm_eps);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int packet = rank + group_lanes * c;
        if (packet >= half_packets) continue;
        float wa[kElems], wb[kElems];
        detail::unpack<T, kElems>(weight_first[c], wa);
        detail::unpack<T, kElems>(weight_second[c], wb);
#pragma unroll
        for (int e = 0; e < kElems; ++e) {
          a[c][e] *= inv_rms * wa[e];
          b[c][e] *= inv_rms * wb[e];
        }
      }
    }
    float rotated_a[kChunks][kElems], rotated_b[kChunks][kElems];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int e = 0; e < kElems; ++e) {
        rotated_a[c][e] = a[c][e] * cos_angle[c][e] - b[c][e] * sin_angle[c][e];
        rotated_b[c][e] = b[c][e] * cos_angle[c][e] + a[c][e] * sin_angle[c][e];
      }
    if (kFp8 && !is_q) {
      store_fp8(rotated_a, rotated_b, p.key_cache, p.key_scales);
      continue;
    }
    Unit* dst = is_q ? static_cast<Unit*>(p.q) + (token * heads + head) * 2 * half_packets
                     : static_cast<Unit*>(p.key_cache) + cache_offset;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int packet = rank + group_lanes * c;
      if (packet >= half_packets) continue;
      dst[packet] = detail::pack<T, kElems>(rotated_a[c]);
      dst[half_packets + packet] = detail::pack<T, kElems>(rotated_b[c]);
    }
  }
}

template <class T, int kElems, int kChunks, bool kFp8>
cudaError_t launch_with(const AttentionInputsParams& p, int group_lanes, cudaStream_t stream) {
  const std::int64_t heads_per_token = p.num_heads + 2 * p.num_kv_heads;
  const std::int64_t groups_per_warp = 32 / group_lanes;
  const std::int64_t useful_warps = (heads_per_token + groups_per_warp - 1) / groups_per_warp;
  int sm_count = 0;
  if (const cudaError_t err = detail::current_sm_count(sm_count); err != cudaSuccess) return err;
  const std::int64_t target_warps = kTargetWarpsPerSm * sm_count;
  const std::int64_t warps_per_token =
      std::clamp<std::int64_t>((target_warps + p.num_tokens - 1) / p.num_tokens, 1, useful_warps);
  const std::int64_t blocks =
      (p.num_tokens * warps_per_token + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > detail::kMaxGridX) return cudaErrorInvalidValue;
  return detail::launch_dependent(attention_inputs_kernel<T, kElems, kChunks, kFp8>,
                                  static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream, p,
                                  group_lanes, static_cast<int>(warps_per_token));
}

// 16-byte packets when a half head is a power-of-two number of them (head_dim 16 to 128 in bf16,
// 8 to 128 in f32) and every array is aligned; else single elements, a warp per head.
template <class T, bool kFp8>
cudaError_t launch_typed(const AttentionInputsParams& p, cudaStream_t stream) {
  constexpr int kVec = kVecElems<T>;
  const int half = static_cast<int>(p.head_dim / 2), half_vecs = half / kVec;
  if (half % kVec == 0 && (half_vecs & (half_vecs - 1)) == 0 &&
      detail::vec_aligned(p.qkv, p.q, p.key_cache, p.value_cache, p.q_norm_weight,
                          p.k_norm_weight))
    return launch_with<T, kVec, 1, kFp8>(p, half_vecs, stream);
  return launch_with<T, 1, kMaxHeadDim / 2 / 32, kFp8>(p, 32, stream);
}

}  // namespace

cudaError_t launch_attention_inputs(const AttentionInputsParams& p, cudaStream_t stream) {
  if (p.num_tokens < 0 || p.num_heads < 0 || p.num_kv_heads < 0 || p.num_slots < 0 ||
      p.head_dim < 2 || p.head_dim > kMaxHeadDim || p.head_dim % 2 != 0 ||
      p.num_heads + 2 * p.num_kv_heads > INT32_MAX)
    return cudaErrorInvalidValue;
  if (p.num_tokens * (p.num_heads + 2 * p.num_kv_heads) == 0) return cudaSuccess;
  if (p.qkv == nullptr || p.rotary == nullptr ||
      (p.num_heads > 0 && p.q == nullptr) ||
      (p.num_kv_heads > 0 &&
       (p.slot_mapping == nullptr || p.key_cache == nullptr || p.value_cache == nullptr)))
    return cudaErrorInvalidValue;
  const bool fp8 = p.kv_dtype == DType::fp8_e4m3;
  if (!fp8 && p.kv_dtype != p.dtype) return cudaErrorInvalidValue;
  if (fp8 && p.num_kv_heads > 0 &&
      (p.key_scales == nullptr || p.value_scales == nullptr || p.block_size < 1 ||
       p.num_slots > std::numeric_limits<std::int32_t>::max()))
    return cudaErrorInvalidValue;
  return detail::dispatch_element_type(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return fp8 ? launch_typed<T, true>(p, stream) : launch_typed<T, false>(p, stream);
  });
}

}  // namespace minivllm::cuda
