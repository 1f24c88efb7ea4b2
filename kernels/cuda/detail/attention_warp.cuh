#pragma once
// What both paged attention kernels share: one warp attends kRowsPerWarp query rows (a row is one
// query token of one query head) to a tile of 32 consecutive keys of one KV head, one key per
// lane, keeping an online softmax in fp32; plus the host-side argument checks. Included by .cu
// files only.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace minivllm::cuda::detail {

inline constexpr int kRowsPerWarp = 4;
inline constexpr int kMaxHeadDim = 128;
inline constexpr int kDimsPerLane = kMaxHeadDim / 32;  // lane holds output dims lane + 32 j
inline constexpr int kKeysPerTile = 32;
inline constexpr std::int64_t kMaxGridYZ = 65535;

// One sequence's keys and values of one KV head.
template <class T>
struct PagedKv {
  const T* key_cache;    // already offset to the KV head: + slot * row_stride is a key
  const T* value_cache;  // likewise
  const std::int32_t* block_table;  // the sequence's row of the block tables
  std::int64_t row_stride;          // num_kv_heads * head_dim
  std::int64_t num_blocks;
  std::int32_t block_size;
  int head_dim;
};

template <class T>
__device__ __forceinline__ PagedKv<T> paged_kv(const PagedAttentionParams& p, std::int64_t seq,
                                               std::int64_t kv_head) {
  return {static_cast<const T*>(p.key_cache) + kv_head * p.head_dim,
          static_cast<const T*>(p.value_cache) + kv_head * p.head_dim,
          p.block_tables + seq * p.max_blocks_per_seq,
          p.num_kv_heads * p.head_dim,
          p.num_blocks,
          static_cast<std::int32_t>(p.block_size),
          static_cast<int>(p.head_dim)};
}

// The ranges the CPU reference accepts (it throws for others).
__device__ __forceinline__ bool valid_ranges(std::int32_t query_len, std::int32_t context_len,
                                             const PagedAttentionParams& p) {
  return query_len >= 0 && context_len >= query_len &&
         context_len <= p.max_blocks_per_seq * p.block_size;
}

// Online-softmax state of a warp's rows.
struct RowsState {
  float max[kRowsPerWarp];
  float sum[kRowsPerWarp];
  float acc[kRowsPerWarp][kDimsPerLane];
  bool bad;  // this lane met a block table entry outside the cache

  __device__ __forceinline__ RowsState() : bad(false) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      max[r] = -INFINITY;
      sum[r] = 0.0f;
#pragma unroll
      for (int j = 0; j < kDimsPerLane; ++j) acc[r][j] = 0.0f;
    }
  }
};

// Attends the rows to the keys [tile_start, tile_start + 32) below num_keys; row r sees key p
// when p <= row_pos[r] (a row with row_pos -1 sees none). q_rows: the rows' queries in f32,
// [kRowsPerWarp][head_dim], in 16-byte aligned shared memory. Called by all 32 lanes of the warp.
template <class T>
__device__ void attend_key_tile(const PagedKv<T>& kv, const float* q_rows,
                                const std::int32_t (&row_pos)[kRowsPerWarp],
                                std::int32_t tile_start, std::int32_t num_keys, float scale,
                                RowsState& st) {
  const int lane = threadIdx.x % 32;
  const std::int32_t key = tile_start + lane;
  std::int64_t slot = -1;
  if (key < num_keys) {
    const std::int32_t block = kv.block_table[key / kv.block_size];
    if (block >= 0 && block < kv.num_blocks)
      slot = std::int64_t{block} * kv.block_size + key % kv.block_size;
    else
      st.bad = true;
  }

  float score[kRowsPerWarp] = {};
  if (slot >= 0) {
    const T* k = kv.key_cache + slot * kv.row_stride;
    for (int d = 0; d < kv.head_dim; d += kVecElems<T>) {
      float k_vec[kVecElems<T>];
      load_vec(k + d, k_vec);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        // Every lane reads the same query values: 16-byte shared-memory broadcasts.
        const float4* q = reinterpret_cast<const float4*>(q_rows + r * kv.head_dim + d);
#pragma unroll
        for (int e = 0; e < kVecElems<T>; e += 4) {
          const float4 q4 = q[e / 4];
          score[r] += q4.x * k_vec[e] + q4.y * k_vec[e + 1] + q4.z * k_vec[e + 2] +
                      q4.w * k_vec[e + 3];
        }
      }
    }
  }

  float prob[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const bool visible = slot >= 0 && key <= row_pos[r];
    const float s = visible ? score[r] * scale : -INFINITY;
    const float new_max = fmaxf(st.max[r], warp_max(s));
    prob[r] = 0.0f;
    if (new_max == -INFINITY) continue;  // the row has seen no key yet (warp-uniform)
    const float rescale = expf(st.max[r] - new_max);  // 0 for the row's first keys
    if (visible) prob[r] = expf(s - new_max);
    st.sum[r] = st.sum[r] * rescale + warp_sum(prob[r]);
    st.max[r] = new_max;
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) st.acc[r][j] *= rescale;
  }

  // acc += prob . V: key j's probabilities and slot come from lane j; lanes split the dims.
  for (int j = 0; j < kKeysPerTile; ++j) {
    const std::int64_t slot_j = __shfl_sync(kFullWarp, slot, j);
    if (slot_j < 0) continue;  // warp-uniform
    float prob_j[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) prob_j[r] = __shfl_sync(kFullWarp, prob[r], j);
    const T* v = kv.value_cache + slot_j * kv.row_stride;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < kv.head_dim) {
        const float v_d = to_float(v[d]);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) st.acc[r][i] += prob_j[r] * v_d;
      }
    }
  }
}

// cudaSuccess when the shapes are ones the kernels handle (num_seqs 0 included).
inline cudaError_t check_attention_params(const PagedAttentionParams& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::f32) return cudaErrorInvalidValue;
  // An fp8 cache goes with bf16 queries and outputs only, and comes with its scales.
  const bool fp8 = p.kv_dtype == DType::fp8_e4m3;
  if (!fp8 && p.kv_dtype != p.dtype) return cudaErrorInvalidValue;
  if (fp8 && (p.dtype != DType::bf16 ||
              (p.num_seqs > 0 && (p.key_scales == nullptr || p.value_scales == nullptr))))
    return cudaErrorInvalidValue;
  // A row is read in 16-byte pieces of the cache's elements (an fp8 cache's: 16 codes a lane).
  const auto vec_elems = static_cast<std::int64_t>(16 / dtype_size(p.kv_dtype));
  const bool shapes_ok =
      p.num_seqs >= 0 && p.num_seqs <= kMaxGridX && p.max_query_len >= 0 &&
      p.max_blocks_per_seq >= 0 && p.num_blocks >= 0 && p.block_size >= 1 &&
      p.block_size <= 0x7FFFFFFF && p.num_kv_heads >= 1 && p.num_kv_heads <= kMaxGridYZ &&
      p.num_heads >= p.num_kv_heads && p.num_heads % p.num_kv_heads == 0 && p.head_dim >= 1 &&
      p.head_dim <= kMaxHeadDim && p.head_dim % vec_elems == 0;
  if (!shapes_ok) return cudaErrorInvalidValue;
  if (p.num_seqs == 0) return cudaSuccess;
  if (p.q == nullptr || p.key_cache == nullptr || p.value_cache == nullptr ||
      p.block_tables == nullptr || p.query_start == nullptr || p.context_lens == nullptr ||
      p.out == nullptr)
    return cudaErrorInvalidValue;
  // Keys are read 16 bytes at a time.
  if (reinterpret_cast<std::uintptr_t>(p.key_cache) % 16 != 0) return cudaErrorInvalidValue;
  return cudaSuccess;
}

}  // namespace minivllm::cuda::detail
