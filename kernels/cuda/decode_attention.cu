// Decode attention over the paged KV cache, split-K ("flash decoding"): a block of threads per
// (sequence, KV head, up to kMaxRows heads of its group, split of the context). The group's query
// heads share every key and value read. Long contexts in small batches are cut into several
// splits so that the whole GPU streams the cache; each split writes a partial softmax state
// (max, sum, unnormalized output) to the workspace and a second small kernel merges them. A
// sequence whose context fits in one split is written directly, and with one split for all the
// merge is skipped. How a launch is cut is its plan (kernels/cuda/decode_plan.hpp, host code the
// CPU tests pin); kernels/cuda/decode_attention.md has the design's figures.
//
// Inside a block each warp streams its own keys: a key's row (head_dim elements) is spread over
// `lanes_per_key` lanes, 16 bytes each, so a warp reads 32 / lanes_per_key keys per pass and
// kPassesPerStep passes per step. Steps go through a per-warp shared-memory ring by cp.async,
// kStages - 1 steps ahead of the math (each lane reads back only what it copied, so the warp
// needs no barrier). Every lane keeps its own online softmax (in base 2, fp32) over the keys it
// saw; warps and lanes merge once at the end.
//
// An fp8 cache has its own split kernel (decode_split_fp8_kernel) with the same plan, ring
// pipeline and end: its steps are tiles of 16 keys whose scores and weighted values are tensor-
// core MMAs on codes converted to f16, in place of the per-lane arithmetic.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/decode_plan.hpp"
#include "kernels/cuda/detail/attention_warp.cuh"
#include "kernels/cuda/detail/cp_async.cuh"
#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/fast_exp2.cuh"
#include "kernels/cuda/detail/fp8.cuh"
#include "kernels/cuda/detail/mma_sync.cuh"
#include "kernels/cuda/detail/warpgroup_mma.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace minivllm::cuda {
namespace {

using namespace detail;
using namespace decode;

constexpr int kThreads = kWarps * 32;
constexpr int kMaxChunks = kMaxHeadDim / 16;  // 16-dim chunks of a head (an MMA's k)
constexpr int kStages = 2;
constexpr int kMergeWarps = 4;
constexpr float kLog2e = 1.4426950408889634f;

// A balanced plan's split length for this step: at least the total context's even share of the
// GPU's block slots (p.total_context is an upload: read before the wait).
__device__ __forceinline__ void balance(DecodePlan& plan, const PagedAttentionParams& p) {
  if (!plan.balanced) return;
  const std::int64_t round = std::int64_t{kWarps} * plan.keys_per_step;
  const std::int64_t units_per_seq = p.num_kv_heads * plan.head_chunks;
  const std::int64_t even = (*p.total_context * units_per_seq + plan.slots - 1) / plan.slots;
  const std::int64_t keys = (even + round - 1) / round * round;
  if (keys > plan.keys_per_split) plan.keys_per_split = keys;
}

// The splits a sequence uses: 1 for one that is invalid (its only block writes NaN).
__device__ __forceinline__ int splits_of(bool valid, std::int32_t context_len,
                                         const DecodePlan& plan) {
  return valid ? static_cast<int>((context_len + plan.keys_per_split - 1) / plan.keys_per_split)
               : 1;
}

struct DecodeSeq {
  std::int32_t token;
  std::int32_t context_len;
  bool has_token;  // false: padding, nothing to write
  bool valid;      // false: its outputs are NaN
};

__device__ __forceinline__ DecodeSeq decode_seq(const PagedAttentionParams& p, std::int64_t seq) {
  const std::int32_t token = p.query_start[seq];
  const std::int32_t query_len = p.query_start[seq + 1] - token;
  const std::int32_t context_len = p.context_lens[seq];
  return {token, context_len, query_len > 0,
          query_len == 1 && context_len >= 1 && valid_ranges(query_len, context_len, p)};
}

// 16 bytes of T as f32.
__device__ __forceinline__ void unpack(const uint4& raw, float (&out)[4]) {
  out[0] = __uint_as_float(raw.x);
  out[1] = __uint_as_float(raw.y);
  out[2] = __uint_as_float(raw.z);
  out[3] = __uint_as_float(raw.w);
}
__device__ __forceinline__ void unpack(const uint4& raw, float (&out)[8]) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // bf16 is the high half of an f32; element 0 is the low half
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
  }
}

// A warp's shared-memory ring (bf16 and f32 caches): per stage and pass, each lane's piece of a
// key and of a value.
struct Ring {
  uint4 pieces[kWarps][kStages][kPassesPerStep][2][32];
};

// Folds softmax state (other_max, other_sum, other_acc) into (max, sum, acc); base-2 exponents.
template <int kVec>
__device__ __forceinline__ void merge_state(float& max, float& sum, float (&acc)[kVec],
                                            float other_max, float other_sum,
                                            const float (&other_acc)[kVec]) {
  const float new_max = fmaxf(max, other_max);
  const float base = new_max == -INFINITY ? 0.0f : new_max;  // both saw no key: weights 0
  const float w = exp2f(max - base), w_other = exp2f(other_max - base);
  sum = sum * w + other_sum * w_other;
#pragma unroll
  for (int e = 0; e < kVec; ++e) acc[e] = acc[e] * w + other_acc[e] * w_other;
  max = new_max;
}

// What a block of the split kernels works on: blockIdx.x is (sequence rank, KV head, head chunk),
// blockIdx.y the split.
struct SplitUnit {
  std::int64_t seq;
  std::int64_t kv_head;
  int chunk;
  int split;
};

__device__ __forceinline__ SplitUnit split_unit(const PagedAttentionParams& p,
                                                const DecodePlan& plan) {
  const std::int64_t units_per_seq = p.num_kv_heads * plan.head_chunks;
  const std::int64_t seq_rank = blockIdx.x / units_per_seq;
  return {p.seq_order != nullptr ? p.seq_order[seq_rank] : seq_rank,
          blockIdx.x % units_per_seq / plan.head_chunks,
          static_cast<int>(blockIdx.x % plan.head_chunks), static_cast<int>(blockIdx.y)};
}

// What a split block attends, once its sequence's length is in and the split is known to hold
// keys: the sequence's splits, where the block's keys end, and its query heads (the first, how
// many, and the first one's q and output row).
struct SplitWork {
  int seq_splits;
  std::int32_t key_end;
  std::int64_t first_head;
  int rows;
  std::int64_t q_offset;
};

template <int kRows>
__device__ __forceinline__ SplitWork split_work(const PagedAttentionParams& p,
                                                const DecodePlan& plan, const SplitUnit& unit,
                                                const DecodeSeq& s, int seq_splits,
                                                std::int32_t key_begin, int head_dim) {
  SplitWork w;
  w.seq_splits = seq_splits;
  const std::int64_t split_end = key_begin + plan.keys_per_split;
  w.key_end = !s.valid ? key_begin
                       : (s.context_len < split_end ? s.context_len
                                                    : static_cast<std::int32_t>(split_end));
  const int group = static_cast<int>(p.num_heads / p.num_kv_heads);
  w.first_head = unit.kv_head * group + unit.chunk * kMaxRows;
  w.rows = min(kRows, group - unit.chunk * kMaxRows);
  w.q_offset = (std::int64_t{s.token} * p.num_heads + w.first_head) * head_dim;
  return w;
}

// A split block's warps' softmax states, staged in shared memory (after the ring drained):
// acc [kWarps][kRows][kMaxHeadDim], then max and sum [kWarps][kRows].
template <int kRows>
struct StagedStates {
  float* acc;
  float* max;
  float* sum;
  __device__ explicit StagedStates(void* ring)
      : acc(static_cast<float*>(ring)),
        max(acc + kWarps * kRows * kMaxHeadDim),
        sum(max + kWarps * kRows) {}
};

// The end of a split block: merges the staged warps' states and writes the output (a sequence of
// one split) or the split's partial state. `bad`: the block met a table entry outside the cache.
template <class T, int kRows>
__device__ __forceinline__ void write_split(const PagedAttentionParams& p, const DecodePlan& plan,
                                            const StagedStates<kRows>& staged, bool bad,
                                            const SplitUnit& unit, const DecodeSeq& s,
                                            const SplitWork& work) {
  const int head_dim = static_cast<int>(p.head_dim);
  T* out = static_cast<T*>(p.out);
  for (int i = threadIdx.x; i < work.rows * head_dim; i += kThreads) {
    const int r = i / head_dim, d = i % head_dim;
    float max_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) max_all = fmaxf(max_all, staged.max[w * kRows + r]);
    const float base = max_all == -INFINITY ? 0.0f : max_all;
    float sum = 0.0f, value = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float weight = exp2f(staged.max[w * kRows + r] - base);
      sum += staged.sum[w * kRows + r] * weight;
      value += staged.acc[(w * kRows + r) * kMaxHeadDim + d] * weight;
    }
    if (work.seq_splits == 1) {
      out[work.q_offset + i] = from_float<T>(bad || !s.valid ? NAN : value / sum);
    } else {
      const std::int64_t partial =
          (unit.seq * p.num_heads + work.first_head + r) * plan.num_splits + unit.split;
      plan.partial_acc[partial * head_dim + d] = bad ? NAN : value;
      if (d == 0) {
        plan.partial_max_sum[2 * partial] = max_all;
        plan.partial_max_sum[2 * partial + 1] = bad ? NAN : sum;
      }
    }
  }
}

template <class T, int kRows>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    decode_split_kernel(PagedAttentionParams p, DecodePlan plan) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // a lane's 16-byte piece
  balance(plan, p);
  // Per warp and stage: each pass's keys and values, a piece per lane.
  __shared__ __align__(16) Ring ring;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const SplitUnit unit = split_unit(p, plan);

  // This lane's piece of a key row, and which key of a pass it reads.
  const int head_dim = static_cast<int>(p.head_dim);
  const int lanes_per_key = 1 << plan.lanes_per_key_log2;
  const int dim0 = (lane & (lanes_per_key - 1)) * kVec;
  const bool has_dims = dim0 < head_dim;
  const int key_lane = lane >> plan.lanes_per_key_log2;
  const int keys_per_pass = 32 >> plan.lanes_per_key_log2;

  // Where the warp's steps start does not depend on the context length: the first steps' block
  // table entries load alongside it.
  const std::int32_t* block_table = p.block_tables + unit.seq * p.max_blocks_per_seq;
  const std::int64_t table_keys = p.max_blocks_per_seq * p.block_size;  // keys the row covers
  const auto block_size = static_cast<std::int32_t>(p.block_size);
  const int step_stride = kWarps * plan.keys_per_step;
  const auto key_begin = static_cast<std::int32_t>(unit.split * plan.keys_per_split);
  const std::int32_t warp_begin = key_begin + warp * plan.keys_per_step;
  const auto block_of = [&](std::int32_t key) {
    return plan.block_shift >= 0 ? key >> plan.block_shift : key / block_size;
  };
  const auto offset_in_block = [&](std::int32_t key) {
    return plan.block_shift >= 0 ? key & (block_size - 1) : key % block_size;
  };
  // The cache blocks of step j's keys (one lookup for all passes when a step stays in a block).
  // Entries past the context are inside the table too: read, never used.
  const auto lookup = [&](int j, std::int32_t (&blocks)[kPassesPerStep]) {
    const std::int32_t start = warp_begin + j * step_stride;
    if (plan.block_aligned) {
      const std::int32_t b = start < table_keys ? block_table[block_of(start)] : 0;
#pragma unroll
      for (int u = 0; u < kPassesPerStep; ++u) blocks[u] = b;
      return;
    }
#pragma unroll
    for (int u = 0; u < kPassesPerStep; ++u) {
      const std::int32_t key = start + u * keys_per_pass + key_lane;
      blocks[u] = key < table_keys ? block_table[block_of(key)] : 0;
    }
  };
  std::int32_t first_blocks[kStages][kPassesPerStep];
#pragma unroll
  for (int j = 0; j < kStages; ++j) lookup(j, first_blocks[j]);

  const DecodeSeq s = decode_seq(p, unit.seq);
  // The block tables and lengths are the step's uploads, which no kernel writes: they are in
  // while the kernel before this one (which writes q and this step's keys) finishes.
  wait_for_prior_grids();
  allow_dependents();
  if (!s.has_token) return;
  const int seq_splits = splits_of(s.valid, s.context_len, plan);
  if (unit.split >= seq_splits) return;  // the context ends before this split
  const SplitWork work = split_work<kRows>(p, plan, unit, s, seq_splits, key_begin, head_dim);
  const std::int32_t key_end = work.key_end;
  const int rows = work.rows;
  // Scores come out in base 2: q carries scale * log2(e).
  float q[kRows][kVec];
  {
    const T* q_ptr = static_cast<const T*>(p.q) + work.q_offset + dim0;
    const float q_scale = p.scale * kLog2e;
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        q[r][e] = r < rows && has_dims ? to_float(q_ptr[r * head_dim + e]) * q_scale : 0.0f;
  }

  const T* key_cache = static_cast<const T*>(p.key_cache) + unit.kv_head * head_dim + dim0;
  const T* value_cache = static_cast<const T*>(p.value_cache) + unit.kv_head * head_dim + dim0;
  const std::int64_t row_stride = p.num_kv_heads * p.head_dim;
  const int num_steps =
      key_end > warp_begin ? (key_end - warp_begin + step_stride - 1) / step_stride : 0;
  bool bad = false;  // a block table entry outside the cache

  // Queues step j's keys and values into its stage of the ring (zeros past the split's end).
  const auto issue = [&](int j, const std::int32_t (&blocks)[kPassesPerStep]) {
    const std::int32_t start = warp_begin + j * step_stride;
    if (start < key_end) {
      std::int64_t slots[kPassesPerStep];  // of pass u's key, 0 where nothing is loaded
      bool load[kPassesPerStep];
      if (plan.block_aligned) {
        const bool in_cache = blocks[0] >= 0 && blocks[0] < p.num_blocks;
        bad |= !in_cache;
        const std::int64_t first =
            std::int64_t{blocks[0]} * block_size + offset_in_block(start) + key_lane;
#pragma unroll
        for (int u = 0; u < kPassesPerStep; ++u) {
          load[u] = in_cache && has_dims && start + u * keys_per_pass + key_lane < key_end;
          slots[u] = load[u] ? first + u * keys_per_pass : 0;
        }
      } else {
#pragma unroll
        for (int u = 0; u < kPassesPerStep; ++u) {
          const std::int32_t key = start + u * keys_per_pass + key_lane;
          const bool in_split = key < key_end;
          const bool in_cache = blocks[u] >= 0 && blocks[u] < p.num_blocks;
          bad |= in_split && !in_cache;
          load[u] = in_split && in_cache && has_dims;
          slots[u] = load[u] ? std::int64_t{blocks[u]} * block_size + offset_in_block(key) : 0;
        }
      }
#pragma unroll
      for (int u = 0; u < kPassesPerStep; ++u) {
        uint4* dst = ring.pieces[warp][j % kStages][u][0] + lane;
        const std::int64_t offset = slots[u] * row_stride;
        cp_async_16(dst, key_cache + offset, load[u]);
        cp_async_16(dst + 32, value_cache + offset, load[u]);
      }
    }
    cp_async_commit();  // even when empty: the wait below counts groups
  };

  float row_max[kRows], row_sum[kRows], acc[kRows][kVec];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[r][e] = 0.0f;
  }

  // Step j: scores of its keys, then the online softmax and prob . V.
  const auto attend = [&](int j) {
    const std::int32_t start = warp_begin + j * step_stride;
    const uint4(&stage)[kPassesPerStep][2][32] = ring.pieces[warp][j % kStages];
    float score[kPassesPerStep][kRows];
#pragma unroll
    for (int u = 0; u < kPassesPerStep; ++u) {
      float k[kVec];
      unpack(stage[u][0][lane], k);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < kVec; ++e) dot = fmaf(q[r][e], k[e], dot);
        score[u][r] = dot;
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      if (offset >= lanes_per_key) continue;  // warp-uniform
#pragma unroll
      for (int u = 0; u < kPassesPerStep; ++u)
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          score[u][r] += __shfl_xor_sync(kFullWarp, score[u][r], offset);
    }
#pragma unroll
    for (int u = 0; u < kPassesPerStep; ++u) {
      if (start + u * keys_per_pass + key_lane >= key_end)
#pragma unroll
        for (int r = 0; r < kRows; ++r) score[u][r] = -INFINITY;
    }
    float prob[kPassesPerStep][kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float new_max = row_max[r];
#pragma unroll
      for (int u = 0; u < kPassesPerStep; ++u) new_max = fmaxf(new_max, score[u][r]);
      const float base = new_max == -INFINITY ? 0.0f : new_max;  // no key yet: weights 0
      const float rescale = exp2f(row_max[r] - base);
      float sum = 0.0f;
#pragma unroll
      for (int u = 0; u < kPassesPerStep; ++u) {
        prob[u][r] = exp2f(score[u][r] - base);
        sum += prob[u][r];
      }
      row_sum[r] = row_sum[r] * rescale + sum;
      row_max[r] = new_max;
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[r][e] *= rescale;
    }
#pragma unroll
    for (int u = 0; u < kPassesPerStep; ++u) {
      float v[kVec];
      unpack(stage[u][1][lane], v);
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[r][e] = fmaf(prob[u][r], v[e], acc[r][e]);
    }
  };

  // The pipeline: step j + kStages - 1 is queued and step j + kStages's table entries loaded
  // while step j is attended.
#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j, first_blocks[j]);
  std::int32_t blocks[kPassesPerStep];
#pragma unroll
  for (int u = 0; u < kPassesPerStep; ++u) blocks[u] = first_blocks[kStages - 1][u];
  for (int j = 0; j < num_steps; ++j) {
    issue(j + kStages - 1, blocks);
    lookup(j + kStages, blocks);
    cp_async_wait<kStages - 1>();
    attend(j);
  }
  cp_async_wait<0>();

  // Merge the warp's key lanes (lanes with the same dims hold different keys' states).
  for (int offset = lanes_per_key; offset < 32; offset *= 2) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float other_acc[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) other_acc[e] = __shfl_xor_sync(kFullWarp, acc[r][e], offset);
      const float other_max = __shfl_xor_sync(kFullWarp, row_max[r], offset);
      const float other_sum = __shfl_xor_sync(kFullWarp, row_sum[r], offset);
      merge_state(row_max[r], row_sum[r], acc[r], other_max, other_sum, other_acc);
    }
  }

  // Merge the warps through shared memory (the ring, now drained).
  __syncthreads();
  const StagedStates<kRows> staged(&ring);
  if (key_lane == 0 && has_dims) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int e = 0; e < kVec; ++e) staged.acc[(warp * kRows + r) * kMaxHeadDim + dim0 + e] =
          acc[r][e];
  }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      staged.max[warp * kRows + r] = row_max[r];
      staged.sum[warp * kRows + r] = row_sum[r];
    }
  }
  bad = __syncthreads_or(bad);
  write_split<T, kRows>(p, plan, staged, bad, unit, s, work);
}

// The fp8_e4m3 cache's split kernel: the same blocks, splits and ring, on tensor cores. A warp's
// step is a tile of kTileKeys keys. Keys and values are copied as rows of 16-byte chunks
// (swizzled; each copy instruction reads whole rows: a row's sectors spread over instructions
// cost 10-20 % of the read rate) and converted to f16 in registers (exact); q goes to f16 too,
// scaled down by a power of two only if its largest element would overflow f16. Scores S = K q^T
// are one mma.m16n8k16.f16 per 16 dims (keys as A's rows, the block's query heads as B's
// columns), and the output O^T = V^T P^T one per 16 dims (dims as A's rows, through
// ldmatrix.trans). The
// softmax state of a head is the warp's (maxima reduced over the lanes that hold its scores), so
// the weights P are at most 1 and go to the MMA as f16: each key's value scale, a power of two,
// joins its exponent (weights exp2(s + log2 value_scale - max)); the row sum keeps exp2(s - max).
//
// Within a 16-dim chunk the MMA's k index runs over the dims in the order the fragments find
// them: for lane 4g + t, A's columns 2t, 2t + 1 are dims 4t, 4t + 1 of the chunk and columns
// 2t + 8, 2t + 9 dims 4t + 2, 4t + 3 (ldmatrix gives a lane 4 consecutive codes of a row), and
// q's B fragments follow the same order. O^T's rows g and g + 8 of chunk i are dims 16i + 2g and
// + 1 (ldmatrix.trans gives a lane 2 consecutive codes of 2 keys).
//
// One warp's stage of the fp8 ring: a tile's key and value rows (16-byte chunk c of key k at
// swizzled(k, c)) and their e8m0 scales.
struct alignas(128) Fp8Stage {
  uint4 keys[kTileKeys][8];
  uint4 values[kTileKeys][8];
  std::uint8_t scales[2][kTileKeys];  // [0]: the keys', [1]: the values'
};
static_assert(offsetof(Fp8Stage, scales) % 16 == 0, "a tile's scales are one 16-byte copy");

// Two floats as f16 bits, lo in the low half.
__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  const __half2_raw raw = __floats2half2_rn(lo, hi);
  return std::uint32_t{raw.x} | std::uint32_t{raw.y} << 16;
}

// kChunks: head_dim / 16 when known at compile time (its loops then carry no branches, so the
// compiler can overlap a tile's loads, conversions and MMAs); 0: read from p.
template <int kRows, int kChunks>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    decode_split_fp8_kernel(PagedAttentionParams p, DecodePlan plan) {
  constexpr int kLoopChunks = kChunks > 0 ? kChunks : kMaxChunks;
  balance(plan, p);
  __shared__ __align__(128) Fp8Stage ring[kWarps][kStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // fragment row (or column) group and pair
  const SplitUnit unit = split_unit(p, plan);
  const int head_dim = static_cast<int>(p.head_dim);
  const int chunks = kChunks > 0 ? kChunks : head_dim / 16;

  // A tile's rows are copied row after row (lane + 32m is key (lane + 32m) / chunks, chunk
  // (lane + 32m) % chunks: an instruction reads whole rows). The scales: in a block-aligned plan
  // lane 0 copies the tile's 16 key scales and lane 16 its value scales (consecutive bytes);
  // otherwise lane l reads key l % 16's key (l < 16) or value scale.
  constexpr int kCopies = (kLoopChunks + 1) / 2;  // pieces of each operand a lane copies
  // With the head size known at compile time kChunks divides 32: a lane's pieces are one chunk of
  // keys kPieceKeys apart, so piece m is piece 0 moved by m * kPieceKeys rows.
  constexpr int kPieceKeys = kChunks > 0 ? 32 / kChunks : 0;
  static_assert(kChunks == 0 || (32 % kChunks == 0 && kPieceKeys >= 4));
  const int copy_key = lane % kTileKeys;
  const auto piece_key = [&](int m) {
    return kChunks > 0 ? lane / kChunks + m * kPieceKeys : (lane + 32 * m) / chunks;
  };
  const auto piece_chunk = [&](int m) {
    return kChunks > 0 ? lane % kChunks : (lane + 32 * m) % chunks;
  };
  const auto has_piece = [&](int m) { return lane + 32 * m < kTileKeys * chunks; };
  const std::int32_t* block_table = p.block_tables + unit.seq * p.max_blocks_per_seq;
  // Keys are 32-bit (a split's keys_per_split); so is the table's width in keys.
  const auto table_keys = static_cast<std::int32_t>(
      min(p.max_blocks_per_seq * p.block_size, std::int64_t{INT32_MAX}));
  const auto block_size = static_cast<std::int32_t>(p.block_size);
  const int step_stride = kWarps * kTileKeys;
  const auto key_begin = static_cast<std::int32_t>(unit.split * plan.keys_per_split);
  const std::int32_t warp_begin = key_begin + warp * kTileKeys;
  const auto block_of = [&](std::int32_t key) {
    return plan.block_shift >= 0 ? key >> plan.block_shift : key / block_size;
  };
  const auto offset_in_block = [&](std::int32_t key) {
    return plan.block_shift >= 0 ? key & (block_size - 1) : key % block_size;
  };
  // The cache blocks of the keys this lane copies in step j: its pieces', then its scale's (a
  // step inside one cache block: one lookup). Entries past the context are inside the table:
  // read, never used.
  const auto lookup = [&](int j, std::int32_t (&blocks)[kCopies + 1]) {
    const std::int32_t start = warp_begin + j * step_stride;
    const auto entry = [&](std::int32_t key) {
      return key < table_keys ? block_table[block_of(key)] : 0;
    };
    if (plan.block_aligned) {
      blocks[0] = entry(start);  // the tile's one block (the other entries go unused)
      return;
    }
#pragma unroll
    for (int m = 0; m < kCopies; ++m) blocks[m] = has_piece(m) ? entry(start + piece_key(m)) : 0;
    blocks[kCopies] = entry(start + copy_key);
  };
  std::int32_t first_blocks[kStages][kCopies + 1] = {};
#pragma unroll
  for (int j = 0; j < kStages; ++j) lookup(j, first_blocks[j]);

  const DecodeSeq s = decode_seq(p, unit.seq);
  wait_for_prior_grids();  // as in decode_split_kernel
  allow_dependents();
  if (!s.has_token) return;
  const int seq_splits = splits_of(s.valid, s.context_len, plan);
  if (unit.split >= seq_splits) return;
  const SplitWork work = split_work<kRows>(p, plan, unit, s, seq_splits, key_begin, head_dim);
  const std::int32_t key_end = work.key_end;
  const int rows = work.rows;

  // q as B fragments: lane 4g + t holds head g's dims 16c + 4t .. + 3 of each chunk c (zeros for
  // heads past the block's rows).
  std::uint32_t q_frag[kLoopChunks][2];
  float score_scale = p.scale * kLog2e;
  {
    float qv[kLoopChunks][4];
    float amax = 0.0f;
    const __nv_bfloat16* q_ptr =
        static_cast<const __nv_bfloat16*>(p.q) + work.q_offset + g * head_dim + 4 * t;
#pragma unroll
    for (int c = 0; c < kLoopChunks; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        qv[c][e] = g < rows && c < chunks ? __bfloat162float(q_ptr[16 * c + e]) : 0.0f;
        amax = fmaxf(amax, fabsf(qv[c][e]));
      }
    amax = warp_max(amax);
    // f16's largest finite value is 65504: scale q down (exactly) below 2^15 when it is larger.
    int exponent = 0;
    frexpf(amax, &exponent);  // amax < 2^exponent
    const int shift = isfinite(amax) ? max(exponent - 15, 0) : 0;
    const float down = ldexpf(1.0f, -shift);
    score_scale = ldexpf(score_scale, shift);
#pragma unroll
    for (int c = 0; c < kLoopChunks; ++c) {
      q_frag[c][0] = pack_half2(qv[c][0] * down, qv[c][1] * down);
      q_frag[c][1] = pack_half2(qv[c][2] * down, qv[c][3] * down);
    }
  }

  const std::uint8_t* key_cache =
      static_cast<const std::uint8_t*>(p.key_cache) + unit.kv_head * head_dim;
  const std::uint8_t* value_cache =
      static_cast<const std::uint8_t*>(p.value_cache) + unit.kv_head * head_dim;
  const std::uint8_t* scales_of_lane = lane < kTileKeys ? p.key_scales : p.value_scales;
  // The scale of the token at `offset` in cache block b: b * scale_block_stride + scale_head +
  // offset (kernels/fp8_scales.hpp).
  const std::int64_t scale_block_stride = fp8_scale_index(1, 0, 0, p.num_kv_heads, block_size);
  const std::int64_t scale_head = fp8_scale_index(0, 0, unit.kv_head, p.num_kv_heads, block_size);
  const std::int64_t row_stride = p.num_kv_heads * p.head_dim;
  // This lane's piece m: its offset in the codes from the tile's first row, and in a stage. Piece
  // 0's are computed once; with kChunks > 0 the others follow by constants (piece 0's key is below
  // kPieceKeys, so moving by k keys flips the swizzle by k % 8), and the loop needs no per-piece
  // index arithmetic.
  const auto piece0_codes =
      static_cast<std::int32_t>(piece_key(0) * row_stride) + 16 * piece_chunk(0);
  const std::uint32_t piece0_smem = swizzled(piece_key(0), piece_chunk(0));
  const auto piece_codes = [&](int m) {
    return kChunks > 0
               ? piece0_codes + static_cast<std::int32_t>(m * kPieceKeys * row_stride)
               : static_cast<std::int32_t>(piece_key(m) * row_stride) + 16 * piece_chunk(m);
  };
  const auto piece_smem = [&](int m) {
    if constexpr (kChunks > 0) {
      const auto flip = static_cast<std::uint32_t>((m * kPieceKeys % 8) << 4);
      return (piece0_smem ^ flip) + static_cast<std::uint32_t>(128 * m * kPieceKeys);
    } else {
      return swizzled(piece_key(m), piece_chunk(m));
    }
  };
  const int num_steps =
      key_end > warp_begin ? (key_end - warp_begin + step_stride - 1) / step_stride : 0;
  bool bad = false;

  // Queues step j's tile into its stage (zeros past the split's end).
  const auto issue = [&](int j, const std::int32_t (&blocks)[kCopies + 1]) {
    const std::int32_t start = warp_begin + j * step_stride;
    if (start < key_end) {
      Fp8Stage& stage = ring[warp][j % kStages];
      std::uint8_t* stage_scales = stage.scales[lane / kTileKeys];
      const auto scale_at = [&](std::int32_t block, std::int32_t offset) {
        return block * scale_block_stride + scale_head + offset;
      };
      std::int64_t offsets[kCopies];  // of piece m in the codes, 0 where nothing is loaded
      bool load[kCopies];
      if (plan.block_aligned) {
        // One block for the whole tile: one bounds check, one wide multiply.
        const bool in_cache = blocks[0] >= 0 && blocks[0] < p.num_blocks;
        bad |= !in_cache;
        const std::int64_t tile =
            (std::int64_t{blocks[0]} * block_size + offset_in_block(start)) * row_stride;
        const std::int32_t room = key_end - start;  // the tile's keys inside the split
#pragma unroll
        for (int m = 0; m < kCopies; ++m) {
          load[m] = in_cache && has_piece(m) && piece_key(m) < room;
          offsets[m] = tile + piece_codes(m);  // not read where not loaded: no select
        }
        // The tile's scales, past the split's end too (inside the block; their keys are masked).
        if (copy_key == 0)
          cp_async_16(stage_scales,
                      scales_of_lane + (in_cache ? scale_at(blocks[0], offset_in_block(start)) : 0),
                      in_cache);
      } else {
        // Each key's own block (block sizes that are not a multiple of 16: rare). The scales are
        // read byte by byte, at once.
        const auto slot_of = [&](std::int32_t key, std::int32_t block, bool& loaded) {
          const bool in_split = key < key_end;
          const bool in_cache = block >= 0 && block < p.num_blocks;
          bad |= in_split && !in_cache;
          loaded = in_split && in_cache;
          return loaded ? std::int64_t{block} * block_size + offset_in_block(key) : 0;
        };
#pragma unroll
        for (int m = 0; m < kCopies; ++m) {
          load[m] = false;
          offsets[m] = has_piece(m) ? slot_of(start + piece_key(m), blocks[m], load[m]) *
                                              row_stride + 16 * piece_chunk(m)
                                    : 0;
        }
        bool loaded = false;
        const std::int32_t key = start + copy_key;
        slot_of(key, blocks[kCopies], loaded);
        stage_scales[copy_key] =
            loaded ? scales_of_lane[scale_at(blocks[kCopies], offset_in_block(key))] : 0;
      }
#pragma unroll
      for (int m = 0; m < kCopies; ++m) {
        if (!has_piece(m)) break;
        const std::uint32_t at = piece_smem(m);
        cp_async_16(reinterpret_cast<char*>(stage.keys) + at, key_cache + offsets[m], load[m]);
        cp_async_16(reinterpret_cast<char*>(stage.values) + at, value_cache + offsets[m], load[m]);
      }
    }
    cp_async_commit();  // even when empty: the wait below counts groups
  };

  // The warp's state of heads 2t and 2t + 1 (those past the block's rows are computed, never
  // written): O^T fragments per chunk, maxima (the same in every lane of a t), this lane's
  // share of the sums.
  float acc[kLoopChunks][4];
#pragma unroll
  for (int c = 0; c < kLoopChunks; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[c][e] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  // ldmatrix's row addresses: lanes 8m .. 8m + 7 give matrix m's rows, keys lane % 8 (+ 8 for
  // odd m) of chunk c + m / 2.
  const int ld_key = lane % 8 + 8 * (lane / 8 % 2), ld_chunk = lane / 16;

  const auto attend = [&](int j) {
    const std::int32_t start = warp_begin + j * step_stride;
    const Fp8Stage& stage = ring[warp][j % kStages];
    const std::uint32_t keys_at = shared_address(stage.keys);
    const std::uint32_t values_at = shared_address(stage.values);
    // S: (key g, heads 2t, 2t + 1), (key g + 8, the same); even and odd chunks apart (two
    // chains of MMAs).
    float score[4] = {0.0f, 0.0f, 0.0f, 0.0f}, score_odd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int c = 0; c < kLoopChunks; c += 2) {
      if (kChunks == 0 && c >= chunks) break;
      std::uint32_t r[4];  // keys g and g + 8, chunk c, then chunk c + 1
      ldmatrix_x4(r, keys_at + swizzled(ld_key, c + ld_chunk));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (c + h >= kLoopChunks || (kChunks == 0 && c + h >= chunks)) break;
        const std::uint32_t k[4] = {
            e4m3x2_to_half2_bits<0>(r[2 * h]), e4m3x2_to_half2_bits<0>(r[2 * h + 1]),
            e4m3x2_to_half2_bits<1>(r[2 * h]), e4m3x2_to_half2_bits<1>(r[2 * h + 1])};
        mma_m16n8k16<__half>(h == 0 ? score : score_odd, k, q_frag[c + h][0], q_frag[c + h][1]);
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) score[e] += score_odd[e];
    // Base-2 scores (key scale and softmax scale) and exponents (+ log2 of the value scale).
    float exponent[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = g + 8 * (e / 2);
      const bool live = start + key < key_end && 2 * t + e % 2 < rows;
      score[e] = live ? score[e] * e8m0_to_scale(stage.scales[0][key]) * score_scale : -INFINITY;
      // A value scale is a power of two: e8m0 is its log2 + 127.
      const int value_log2 = static_cast<int>(stage.scales[1][key]) - 127;
      exponent[e] = score[e] + static_cast<float>(value_log2);
    }
    float weight[4], alpha[2];
    bool grew = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = fmaxf(exponent[h], exponent[h + 2]);
#pragma unroll
      for (int offset = 4; offset < 32; offset *= 2)
        tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullWarp, tile_max, offset));
      const float new_max = fmaxf(row_max[h], tile_max);
      grew |= new_max > row_max[h];
      const float base = new_max == -INFINITY ? 0.0f : new_max;  // no key yet: weights 0
      alpha[h] = fast_exp2(row_max[h] - base);
      weight[h] = fast_exp2(exponent[h] - base);
      weight[h + 2] = fast_exp2(exponent[h + 2] - base);
      row_sum[h] =
          row_sum[h] * alpha[h] + fast_exp2(score[h] - base) + fast_exp2(score[h + 2] - base);
      row_max[h] = new_max;
    }
    // P^T as B fragments: lane 4g + t takes head g's weights of keys 2t, 2t + 1 (b0) and
    // 2t + 8, 2t + 9 (b1) from lanes 4 (2t) + g / 2 and 4 (2t + 1) + g / 2.
    const std::uint32_t weights_lo = pack_half2(weight[0], weight[1]);  // key g
    const std::uint32_t weights_hi = pack_half2(weight[2], weight[3]);  // key g + 8
    const int from_even = 8 * t + g / 2, from_odd = from_even + 4;
    const std::uint32_t half = g % 2 ? 0x7632u : 0x5410u;
    const std::uint32_t b0 = __byte_perm(__shfl_sync(kFullWarp, weights_lo, from_even),
                                         __shfl_sync(kFullWarp, weights_lo, from_odd), half);
    const std::uint32_t b1 = __byte_perm(__shfl_sync(kFullWarp, weights_hi, from_even),
                                         __shfl_sync(kFullWarp, weights_hi, from_odd), half);
    // Past the first tiles a head's maximum seldom grows. Where it did not, alpha is exactly 1,
    // or the head has no key yet and its output is still 0.
    if (__any_sync(kFullWarp, grew)) {
#pragma unroll
      for (int c = 0; c < kLoopChunks; ++c) {
        acc[c][0] *= alpha[0];
        acc[c][1] *= alpha[1];
        acc[c][2] *= alpha[0];
        acc[c][3] *= alpha[1];
      }
    }
#pragma unroll
    for (int c = 0; c < kLoopChunks; c += 2) {
      if (kChunks == 0 && c >= chunks) break;
      std::uint32_t r[4];  // keys 2t, 2t + 1 (then 2t + 8, 2t + 9) at dims 16c + 2g, + 1
      ldmatrix_x4_trans(r, values_at + swizzled(ld_key, c + ld_chunk));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (c + h >= kLoopChunks || (kChunks == 0 && c + h >= chunks)) break;
        // Codes (key 2t, dim d), (2t + 1, d), (2t, d + 1), (2t + 1, d + 1): pairs of keys.
        const std::uint32_t lo = __byte_perm(r[2 * h], 0, 0x3120);
        const std::uint32_t hi = __byte_perm(r[2 * h + 1], 0, 0x3120);
        const std::uint32_t v[4] = {e4m3x2_to_half2_bits<0>(lo), e4m3x2_to_half2_bits<1>(lo),
                                    e4m3x2_to_half2_bits<0>(hi), e4m3x2_to_half2_bits<1>(hi)};
        mma_m16n8k16<__half>(acc[c + h], v, b0, b1);
      }
    }
  };

#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j, first_blocks[j]);
  std::int32_t blocks[kCopies + 1];
#pragma unroll
  for (int m = 0; m <= kCopies; ++m) blocks[m] = first_blocks[kStages - 1][m];
  for (int j = 0; j < num_steps; ++j) {
    issue(j + kStages - 1, blocks);
    lookup(j + kStages, blocks);
    cp_async_wait<kStages - 1>();
    __syncwarp();  // the tile's chunks were copied by other lanes of the warp
    attend(j);
    __syncwarp();  // and its stage is refilled by them next
  }
  cp_async_wait<0>();

  // The lanes of a t hold sums over different keys.
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int offset = 4; offset < 32; offset *= 2)
      row_sum[h] += __shfl_xor_sync(kFullWarp, row_sum[h], offset);

  __syncthreads();
  const StagedStates<kRows> staged(&ring);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = 2 * t + h;
    if (r >= rows) continue;
#pragma unroll
    for (int c = 0; c < kLoopChunks; ++c) {
      if (c >= chunks) break;
      float* dst = staged.acc + (warp * kRows + r) * kMaxHeadDim + 16 * c + 2 * g;
      dst[0] = acc[c][h];
      dst[1] = acc[c][h + 2];
    }
    if (g == 0) {
      staged.max[warp * kRows + r] = row_max[h];
      staged.sum[warp * kRows + r] = row_sum[h];
    }
  }
  bad = __syncthreads_or(bad);
  write_split<__nv_bfloat16, kRows>(p, plan, staged, bad, unit, s, work);
}

// Merges the splits' partial states of sequences that used more than one: a warp per
// (sequence, query head), 4 dims per lane.
template <class T>
__global__ void __launch_bounds__(kMergeWarps * 32)
    decode_merge_kernel(PagedAttentionParams p, DecodePlan plan) {
  const int lane = threadIdx.x % 32;
  balance(plan, p);
  const std::int64_t row = blockIdx.x * std::int64_t{kMergeWarps} + threadIdx.x / 32;
  const bool has_row = row < p.num_seqs * p.num_heads;
  const std::int64_t seq = row / p.num_heads, head = row % p.num_heads;
  // The step's uploaded lengths before the wait (see decode_split_kernel).
  const DecodeSeq s = has_row ? decode_seq(p, seq) : DecodeSeq{};
  wait_for_prior_grids();
  allow_dependents();
  if (!has_row) return;
  if (!s.has_token) return;
  const int seq_splits = splits_of(s.valid, s.context_len, plan);
  if (seq_splits == 1) return;  // the split kernel wrote it

  const float* max_sum = plan.partial_max_sum + 2 * row * plan.num_splits;
  float max_all = -INFINITY;
  for (int i = lane; i < seq_splits; i += 32) max_all = fmaxf(max_all, max_sum[2 * i]);
  max_all = warp_max(max_all);
  const float base = max_all == -INFINITY ? 0.0f : max_all;

  const int head_dim = static_cast<int>(p.head_dim);
  const float* acc = plan.partial_acc + row * plan.num_splits * head_dim;
  T* out = static_cast<T*>(p.out) + (std::int64_t{s.token} * p.num_heads + head) * head_dim;
  for (int d = 4 * lane; d < head_dim; d += 4 * 32) {
    float sum = 0.0f;
    float4 value = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < seq_splits; ++i) {
      const float weight = exp2f(max_sum[2 * i] - base);
      sum += max_sum[2 * i + 1] * weight;
      const float4 a = *reinterpret_cast<const float4*>(acc + i * head_dim + d);
      value.x += a.x * weight;
      value.y += a.y * weight;
      value.z += a.z * weight;
      value.w += a.w * weight;
    }
    out[d] = from_float<T>(value.x / sum);
    out[d + 1] = from_float<T>(value.y / sum);
    out[d + 2] = from_float<T>(value.z / sum);
    out[d + 3] = from_float<T>(value.w / sum);
  }
}

// The plan of a launch with these params.
DecodePlan make_plan(const PagedAttentionParams& p, int sm_count, std::size_t workspace_bytes) {
  return decode::make_plan(
      {.q_dtype = p.dtype, .kv_dtype = p.kv_dtype, .num_seqs = p.num_seqs,
       .num_heads = p.num_heads, .num_kv_heads = p.num_kv_heads, .head_dim = p.head_dim,
       .block_size = p.block_size, .max_blocks_per_seq = p.max_blocks_per_seq,
       .total_context = p.total_context != nullptr},
      sm_count, workspace_bytes);
}

std::size_t workspace_bytes_of(const PagedAttentionParams& p, const DecodePlan& plan) {
  if (plan.num_splits == 1) return 0;
  return static_cast<std::size_t>(p.num_seqs * p.num_heads * plan.num_splits * (p.head_dim + 2)) *
         sizeof(float);
}

template <class T, bool kFp8, int kRows>
cudaError_t launch_kernels(const PagedAttentionParams& p, const DecodePlan& plan,
                           cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.num_seqs * p.num_kv_heads * plan.head_chunks),
                  static_cast<unsigned>(plan.num_splits));
  cudaError_t err = cudaSuccess;
  if constexpr (kFp8) {
    // The models' head sizes with their loops unrolled; others read theirs.
    const auto kernel = p.head_dim == 128 ? decode_split_fp8_kernel<kRows, 8>
                        : p.head_dim == 64 ? decode_split_fp8_kernel<kRows, 4>
                                           : decode_split_fp8_kernel<kRows, 0>;
    err = launch_dependent(kernel, grid, kThreads, 0, stream, p, plan);
  } else
    err = launch_dependent(decode_split_kernel<T, kRows>, grid, kThreads, 0, stream, p, plan);
  if (err != cudaSuccess) return err;
  if (plan.num_splits == 1) return cudaSuccess;
  const auto merge_blocks = static_cast<unsigned>(ceil_div(p.num_seqs * p.num_heads, kMergeWarps));
  return launch_dependent(decode_merge_kernel<T>, merge_blocks, kMergeWarps * 32, 0, stream, p,
                          plan);
}

}  // namespace

std::size_t decode_attention_workspace_bytes(const PagedAttentionParams& p) {
  // The shape checks alone: with no sequences check_attention_params skips the pointers.
  PagedAttentionParams shapes = p;
  shapes.num_seqs = 0;
  int sm_count = 0;
  if (p.num_seqs <= 0 || p.num_seqs > kMaxGridX || check_attention_params(shapes) != cudaSuccess ||
      current_sm_count(sm_count) != cudaSuccess)
    return 0;
  return workspace_bytes_of(p, make_plan(p, sm_count, SIZE_MAX));
}

cudaError_t launch_decode_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (const cudaError_t err = check_attention_params(p); err != cudaSuccess) return err;
  if (p.num_seqs == 0) return cudaSuccess;
  // Values, the workspace and an fp8 tile's scales are read 16 bytes at a time too.
  if (reinterpret_cast<std::uintptr_t>(p.value_cache) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(p.workspace) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(p.key_scales) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(p.value_scales) % 16 != 0)
    return cudaErrorInvalidValue;
  int sm_count = 0;
  if (const cudaError_t err = current_sm_count(sm_count); err != cudaSuccess) return err;
  DecodePlan plan = make_plan(p, sm_count, p.workspace != nullptr ? p.workspace_bytes : 0);
  if (p.num_seqs * p.num_kv_heads * plan.head_chunks > kMaxGridX) return cudaErrorInvalidValue;
  if (plan.num_splits > 1) {
    plan.partial_acc = static_cast<float*>(p.workspace);
    plan.partial_max_sum =
        plan.partial_acc + p.num_seqs * p.num_heads * plan.num_splits * p.head_dim;
  }
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  const auto launch = [&](auto type, auto fp8) {
    using T = typename decltype(type)::type;
    constexpr bool kFp8 = decltype(fp8)::value;
    switch (rows_per_block(group)) {
      case 1: return launch_kernels<T, kFp8, 1>(p, plan, stream);
      case 2: return launch_kernels<T, kFp8, 2>(p, plan, stream);
      default: return launch_kernels<T, kFp8, kMaxRows>(p, plan, stream);
    }
  };
  if (p.kv_dtype == DType::fp8_e4m3)  // bf16 q and out (check_attention_params)
    return launch(ElementType<__nv_bfloat16>{}, std::true_type{});
  return dispatch_element_type(p.dtype,
                               [&](auto type) { return launch(type, std::false_type{}); });
}

}  // namespace minivllm::cuda
