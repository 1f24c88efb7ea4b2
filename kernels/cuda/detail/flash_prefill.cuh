#pragma once
// Flash-attention prefill over the paged KV cache for bf16 and head_dim 64 or 128 on Hopper's
// warpgroup MMA (wgmma, fp32 accumulation). A block of two warpgroups takes 128 query rows of one
// sequence: heads_per_block query heads of one KV group (4, 2 or 1, whichever divides the group)
// times 128 / heads_per_block consecutive new tokens, head-major; each warpgroup owns 64 rows,
// each warp 16. The block walks the keys its rows see (causal: tiles past its last token are
// never loaded) in tiles of Layout<D>::kKeys, copying K and V from the paged cache into shared
// memory with cp.async, two tiles deep, in the 128-byte swizzle that wgmma reads. Per tile a
// warpgroup computes S = Q K^T (Q's fragments loaded from shared memory, K read from it), masks
// only tiles that cross the diagonal, keeps an online softmax in fp32 and adds P V (P in
// registers as bf16, V from shared memory, N-major). A warpgroup skips a tile that all its rows
// are past. With an fp8 cache (kFp8) each thread loads its pieces of tile t + 1 (8 codes and the
// key's scale) into registers before attending tile t and, after it, writes them to shared memory
// as bf16, code x scale (exact: the scale is a power of two), in the same layout. Included by
// prefill_attention.cu only; notes and figures in prefill_attention.md.
#include <cmath>
#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/detail/attention_warp.cuh"
#include "kernels/cuda/detail/cp_async.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/fast_exp2.cuh"
#include "kernels/cuda/detail/fp8.cuh"
#include "kernels/cuda/detail/warpgroup_mma.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace minivllm::cuda::detail::flash {

using Bf16 = __nv_bfloat16;

inline constexpr int kWarpGroups = 2;
inline constexpr int kThreads = kWarpGroups * 128;
inline constexpr int kGroupRows = 64;
inline constexpr int kRows = kWarpGroups * kGroupRows;
inline constexpr int kStages = 2;
inline constexpr float kLog2e = 1.4426950408889634f;
// Keys per K/V tile at head_dim 128: 128, as at head_dim 64 (S = Q K^T and O += P V then share a
// wgmma shape; right since Q's fragments are reloaded per tile, see attend_tile). 5-10 % over 64
// (prefill_attention.md).
inline constexpr int kKeysAtHeadDim128 = 128;
static_assert(kKeysAtHeadDim128 == 64 || kKeysAtHeadDim128 == 128, "wgmma N of 64 or 128");

// Shared memory, 1024-aligned: the block's Q rows (reused to stage the output), then per stage a K
// and a V tile. Every tile is [D / 64][rows][64] bf16: 128-byte rows, 16-byte chunk c of row r at
// c ^ (r % 8), which is wgmma's 128-byte swizzle and keeps ldmatrix free of bank conflicts.
template <int D>
struct Layout {
  static constexpr int kKeys = D == 128 ? kKeysAtHeadDim128 : 128;
  static_assert(D == 64 || D == 128, "the flash kernel is instantiated for head_dim 64 and 128");
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static constexpr int kQBytes = kRows * D * 2;
  static constexpr int kTileBytes = kKeys * D * 2;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K then V
  static constexpr int kSmemBytes = kQBytes + kStages * kStageBytes + 1024;  // + alignment
  static constexpr int kRowsPerPass = kThreads / kChunks;  // rows one pass of copies covers

  template <int kTileRows>
  __device__ static std::uint32_t offset(int row, int chunk) {
    return static_cast<std::uint32_t>((chunk / 8) * (kTileRows * 128) + row * 128 +
                                      (((chunk % 8) ^ (row & 7)) << 4));
  }
};

// The block's rows: heads_per_block heads x tokens_per_block tokens, head-major; row r is token
// m0 + r % tokens_per_block of head first_head + r / tokens_per_block.
struct BlockRows {
  std::int64_t first_token;  // the sequence's first token in q and out
  std::int32_t m0;           // the block's first new token, within the sequence
  int tokens;                // of the block's tokens, those the sequence has
  int tokens_per_block;
  int first_head;
};

template <int D>
__device__ __forceinline__ void load_q(const PagedAttentionParams& p, const BlockRows& b,
                                       unsigned char* q_smem) {
  using L = Layout<D>;
  const Bf16* q = static_cast<const Bf16*>(p.q);
  const int chunk = threadIdx.x % L::kChunks;
#pragma unroll
  for (int i = 0; i < kRows / L::kRowsPerPass; ++i) {
    const int r = threadIdx.x / L::kChunks + i * L::kRowsPerPass;
    const int token = r % b.tokens_per_block, head = b.first_head + r / b.tokens_per_block;
    const bool ok = token < b.tokens;
    const std::int64_t src =
        ok ? ((b.first_token + b.m0 + token) * p.num_heads + head) * D + chunk * 8 : 0;
    cp_async_16(q_smem + L::template offset<kRows>(r, chunk), q + src, ok);
  }
}

// The sequence's keys and values of the block's KV head, as the tile loads read them.
struct KvSource {
  const unsigned char* key;    // the cache offset to the KV head: + slot * row_bytes is a key row
  const unsigned char* value;  // likewise
  const std::uint8_t* key_scales;  // fp8: the cache's (kernels/fp8_scales.hpp); else null
  const std::uint8_t* value_scales;
  const std::int32_t* block_table;
  std::int64_t row_bytes;
  // fp8: the scale of the token at `offset` in cache block b is at
  // b * scale_block_stride + scale_head + offset (kernels/fp8_scales.hpp); 32-bit, since the
  // kernel's time is sensitive to integer work per row (flash_prefill_supported checks the range).
  std::int32_t scale_block_stride, scale_head;
  std::int64_t num_blocks;
  std::int32_t block_size;
  std::int32_t num_keys;  // keys [0, num_keys) exist; later rows of a tile are zero-filled
};

// Calls piece(i, row, slot, ok, block, offset) for the thread's rows of keys [n0, n0 + L::kKeys):
// row first + i * kRowsPerPass of the tile, at cache slot `slot` (offset `offset` in cache block
// `block`); !ok (slot 0) past num_keys or where the block table entry is outside the cache, which
// also sets `bad`.
template <int D, class Piece>
__device__ __forceinline__ void for_tile_rows(const KvSource& kv, std::int32_t n0, bool& bad,
                                              Piece&& piece) {
  using L = Layout<D>;
  constexpr int kStep = L::kRowsPerPass;
  const int first = threadIdx.x / L::kChunks;
  // Walk the block table alongside, reading an entry only when the row enters a new block (once
  // per tile when block_size >= kKeys).
  std::int32_t key = n0 + first;
  std::int32_t index = key / kv.block_size, offset = key % kv.block_size;
  std::int32_t loaded = -1, entry = 0;
#pragma unroll
  for (int i = 0; i < L::kKeys / kStep; ++i, key += kStep) {
    bool ok = false;
    std::int64_t slot = 0;
    if (key < kv.num_keys) {
      if (index != loaded) {
        entry = kv.block_table[index];
        loaded = index;
      }
      ok = entry >= 0 && entry < kv.num_blocks;
      bad |= !ok;
      if (ok) slot = std::int64_t{entry} * kv.block_size + offset;
    }
    piece(i, first + i * kStep, slot, ok, entry, offset);
    offset += kStep;
    if (offset >= kv.block_size) {
      if (kv.block_size >= kStep) {
        offset -= kv.block_size;
        ++index;
      } else {
        index += offset / kv.block_size;
        offset %= kv.block_size;
      }
    }
  }
}

// Starts copying the bf16 K and V rows of keys [n0, n0 + L::kKeys) into a stage.
template <int D>
__device__ __forceinline__ void load_kv_tile(const KvSource& kv, std::int32_t n0,
                                             unsigned char* stage, bool& bad) {
  using L = Layout<D>;
  const int chunk = threadIdx.x % L::kChunks;
  for_tile_rows<D>(kv, n0, bad, [&](int, int row, std::int64_t slot, bool ok, std::int32_t,
                                    std::int32_t) {
    const std::int64_t src = slot * kv.row_bytes + chunk * 16;
    const std::uint32_t dst = L::template offset<L::kKeys>(row, chunk);
    cp_async_16(stage + dst, kv.key + src, ok);
    cp_async_16(stage + L::kTileBytes + dst, kv.value + src, ok);
  });
}

// A thread's pieces of an fp8 K/V tile in registers: per row, 8 codes of the key and of the value
// and their e8m0 scales (zeros where nothing is loaded). The scales stay bytes until the pieces
// are converted: converting them here would wait for the loads, which are meant to arrive while
// the previous tile is attended.
template <int D>
struct Fp8Pieces {
  static constexpr int kCount = Layout<D>::kKeys / Layout<D>::kRowsPerPass;
  uint2 key[kCount], value[kCount];
  std::uint32_t key_scale[kCount], value_scale[kCount];
};

template <int D>
__device__ __forceinline__ void load_fp8_tile(const KvSource& kv, std::int32_t n0,
                                              Fp8Pieces<D>& pieces, bool& bad) {
  const int chunk = threadIdx.x % Layout<D>::kChunks;
  for_tile_rows<D>(kv, n0, bad, [&](int i, int, std::int64_t slot, bool ok, std::int32_t block,
                                    std::int32_t offset) {
    const std::int64_t src = slot * kv.row_bytes + chunk * 8;
    pieces.key[i] = ok ? *reinterpret_cast<const uint2*>(kv.key + src) : uint2{0, 0};
    pieces.value[i] = ok ? *reinterpret_cast<const uint2*>(kv.value + src) : uint2{0, 0};
    const std::int32_t at = ok ? block * kv.scale_block_stride + kv.scale_head + offset : 0;
    pieces.key_scale[i] = ok ? kv.key_scales[at] : 0;
    pieces.value_scale[i] = ok ? kv.value_scales[at] : 0;
  });
}

// Two codes' f16 bits (e4m3x2_to_half2_bits) as bf16x2 times `scale`. The pack is exact (every
// e4m3 value is a bf16), so the one rounding is the product's, as with an f32 multiply first;
// the multiply in bf16x2 takes one instruction for two values where f32 takes two.
__device__ __forceinline__ std::uint32_t scaled_bf16x2(std::uint32_t half2_bits,
                                                       __nv_bfloat162 scale) {
  __half2 codes;
  memcpy(&codes, &half2_bits, sizeof codes);
  const __nv_bfloat162 product = __hmul2(__float22bfloat162_rn(__half22float2(codes)), scale);
  std::uint32_t bits;
  memcpy(&bits, &product, sizeof bits);
  return bits;
}

// 8 codes x 2^(e8m0 - 127) as 8 bf16 (exact, short of bf16's subnormals) in one 16-byte chunk.
__device__ __forceinline__ uint4 dequantize_piece(uint2 codes, std::uint32_t e8m0) {
  // e8m0 is a bf16's exponent field: e << 7 is 2^(e - 127) as bf16, for e in [1, 254] (0 only
  // where nothing was loaded: zero, over zero codes).
  const std::uint32_t scale_bits = e8m0 * 0x00800080u;
  __nv_bfloat162 scale;
  memcpy(&scale, &scale_bits, sizeof scale);
  return {scaled_bf16x2(e4m3x2_to_half2_bits<0>(codes.x), scale),
          scaled_bf16x2(e4m3x2_to_half2_bits<1>(codes.x), scale),
          scaled_bf16x2(e4m3x2_to_half2_bits<0>(codes.y), scale),
          scaled_bf16x2(e4m3x2_to_half2_bits<1>(codes.y), scale)};
}

// Writes the thread's pieces into a stage, as load_kv_tile would have: bf16 in the swizzle.
template <int D>
__device__ __forceinline__ void store_fp8_tile(const Fp8Pieces<D>& pieces, unsigned char* stage) {
  using L = Layout<D>;
  const int chunk = threadIdx.x % L::kChunks, first = threadIdx.x / L::kChunks;
#pragma unroll
  for (int i = 0; i < Fp8Pieces<D>::kCount; ++i) {
    const std::uint32_t dst = L::template offset<L::kKeys>(first + i * L::kRowsPerPass, chunk);
    *reinterpret_cast<uint4*>(stage + dst) = dequantize_piece(pieces.key[i], pieces.key_scale[i]);
    *reinterpret_cast<uint4*>(stage + L::kTileBytes + dst) =
        dequantize_piece(pieces.value[i], pieces.value_scale[i]);
  }
}

// A warp's part of its warpgroup's state: 16 rows, in wgmma fragment order ([4 j + 2 h + e] is
// row lane / 4 + 8 h, column 8 j + 2 (lane % 4) + e).
template <int D>
struct WarpState {
  float o[D / 2];
  float max[2];  // raw scores (before scale)
  float sum[2];  // this lane's part of the row's sum
};

// The warpgroup's rows against one K/V tile of keys n0 .. n0 + L::kKeys - 1. q_rows: shared
// address of the block's Q tile; row0: the warp's first row there; first_pos: position of the
// warp's first row; `masked`: some key of the tile is past some row of the warpgroup.
template <int D>
__device__ __forceinline__ void attend_tile(WarpState<D>& st, std::uint32_t q_rows, int row0,
                                            std::uint32_t stage, std::int32_t n0,
                                            std::int32_t first_pos, bool masked,
                                            float scale_log2) {
  using L = Layout<D>;
  constexpr int kKeys = L::kKeys;
  const int lane = threadIdx.x % 32;
  const std::uint32_t k_tile = stage, v_tile = stage + L::kTileBytes;

  // Q's A fragments, loaded per tile and dead after the wait. Kept in registers across tiles, they
  // were overwritten: when both wgmmas had the same shape (key tile = head_dim), ptxas (CUDA 13.0)
  // gave their registers to P's fragments, so every tile after the first took P's bits for Q.
  std::uint32_t q[D / 16][4];
#pragma unroll
  for (int k = 0; k < D / 16; ++k)
    ldmatrix_x4(q[k], q_rows + L::template offset<kRows>(row0 + lane % 16, 2 * k + lane / 16));

  // S = Q K^T, 16 dims at a time: K is K-major (its rows are keys), 32 bytes per step within a
  // 64-dim block of rows.
  float s[kKeys / 2];
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < D / 16; ++k)
    wgmma_m64nNk16<kKeys, 0>(
        s, q[k],
        swizzle128_descriptor(k_tile + (k / 4) * (kKeys * 128) + (k % 4) * 32, 16, 1024), k > 0);
  wgmma_commit();
  wgmma_wait<0>();
  pin_registers(s);

  if (masked) {
#pragma unroll
    for (int i = 0; i < kKeys / 2; ++i) {
      const int row = lane / 4 + 8 * (i % 4 / 2), key = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
      if (n0 + key > first_pos + row) s[i] = -INFINITY;
    }
  }

  // Online softmax: the row's running max over its 4 lanes, then P = 2^(s scale log2e - max).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float row_max = st.max[h];
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
      row_max = fmaxf(row_max, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
    row_max = fmaxf(row_max, __shfl_xor_sync(kFullWarp, row_max, 1));
    row_max = fmaxf(row_max, __shfl_xor_sync(kFullWarp, row_max, 2));
    // A row that has seen no key yet keeps max -inf: subtract 0 then, so that 2^-inf = 0.
    const float ref = row_max == -INFINITY ? 0.0f : row_max * scale_log2;
    const float rescale = fast_exp2(st.max[h] * scale_log2 - ref);
    st.max[h] = row_max;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * h + e];
        x = fast_exp2(fmaf(x, scale_log2, -ref));
        sum += x;
      }
    st.sum[h] = st.sum[h] * rescale + sum;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      st.o[4 * j + 2 * h] *= rescale;
      st.o[4 * j + 2 * h + 1] *= rescale;
    }
  }

  // O += P V, 16 keys at a time, P rounded to bf16: S's accumulator layout is the A fragment
  // layout. V is N-major (its rows are keys, dims contiguous): 64-dim blocks kKeys rows apart.
  std::uint32_t pa[kKeys / 16][4];
#pragma unroll
  for (int k = 0; k < kKeys / 16; ++k) {
    pa[k][0] = pack_bf16x2(s[8 * k + 0], s[8 * k + 1]);
    pa[k][1] = pack_bf16x2(s[8 * k + 2], s[8 * k + 3]);
    pa[k][2] = pack_bf16x2(s[8 * k + 4], s[8 * k + 5]);
    pa[k][3] = pack_bf16x2(s[8 * k + 6], s[8 * k + 7]);
    pin_registers(pa[k]);
  }
  pin_registers(st.o);
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < kKeys / 16; ++k) {
    wgmma_m64nNk16<D, 1>(st.o, pa[k],
                         swizzle128_descriptor(v_tile + k * 16 * 128, kKeys * 128, 1024), 1);
  }
  wgmma_commit();
  wgmma_wait<0>();
  pin_registers(st.o);
}

// Writes the warp's valid rows, O / sum (or NaN when `bad`), staging them through the warp's own
// 16 Q rows in shared memory so that each row goes out in 16-byte stores.
template <int D>
__device__ __forceinline__ void store_rows(const WarpState<D>& st, const PagedAttentionParams& p,
                                           const BlockRows& b, unsigned char* q_smem, int row0,
                                           bool bad) {
  using L = Layout<D>;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = st.sum[h];
    sum += __shfl_xor_sync(kFullWarp, sum, 1);
    sum += __shfl_xor_sync(kFullWarp, sum, 2);
    const float inv = bad ? NAN : 1.0f / sum;
    const int row = row0 + lane / 4 + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<std::uint32_t*>(q_smem + L::template offset<kRows>(row, j) +
                                        4 * (lane % 4)) =
          pack_bf16x2(st.o[4 * j + 2 * h] * inv, st.o[4 * j + 2 * h + 1] * inv);
  }
  __syncwarp();

  Bf16* out = static_cast<Bf16*>(p.out);
  const int chunk = lane % L::kChunks;
  constexpr int kRowsPerPass = 32 / L::kChunks;
#pragma unroll
  for (int i = 0; i < 16 / kRowsPerPass; ++i) {
    const int row = row0 + lane / L::kChunks + i * kRowsPerPass;
    const int token = row % b.tokens_per_block, head = b.first_head + row / b.tokens_per_block;
    if (token >= b.tokens) continue;
    *reinterpret_cast<uint4*>(out + ((b.first_token + b.m0 + token) * p.num_heads + head) * D +
                              chunk * 8) =
        *reinterpret_cast<const uint4*>(q_smem + L::template offset<kRows>(row, chunk));
  }
}

// Key splits: where a launch fits in two waves of blocks, the causal triangle leaves it waiting on
// its longest query tiles (a lone 1k prompt: 128 blocks seeing 1 to 8 key tiles). Then every
// query tile gets two blocks, and one with at least kMinSplitTiles key tiles gives each half of
// them. Each half keeps its softmax state per thread in the same fragment layout, so it parks
// that state, as it is, in its slot of the workspace; the second to finish merges the other's
// into its own (in part order: the same bits whichever finishes first), stores the rows and
// re-arms the count.
inline constexpr int kMinSplitTiles = 4;
inline constexpr int kMaxSplitWaves = 2;

template <int D>
struct KeySplit {
  // Per thread: o[D / 2], max[2], sum[2].
  static constexpr int kStateFloats = D / 2 + 4;
  static constexpr std::size_t kSlotBytes = std::size_t{kStateFloats} * kThreads * 4;

  float* states = nullptr;  // [units][2 halves][kStateFloats][kThreads]; null: no splits
  int* bad = nullptr;       // [units][2 halves]
  int* counters = nullptr;  // [units], zeroed

  // Workspace bytes for `units` query tiles' two halves.
  static std::size_t bytes(std::int64_t units) {
    return static_cast<std::size_t>(units) * 2 * (kSlotBytes + sizeof(int));
  }
};

// Parks a half's softmax state in its slot (coalesced: the thread index is the fastest).
template <int D>
__device__ __forceinline__ void park_state(const WarpState<D>& st, float* slot) {
  float* mine = slot + threadIdx.x;
#pragma unroll
  for (int i = 0; i < D / 2; ++i) __stcg(mine + i * kThreads, st.o[i]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    __stcg(mine + (D / 2 + h) * kThreads, st.max[h]);
    __stcg(mine + (D / 2 + 2 + h) * kThreads, st.sum[h]);
  }
}

// st becomes the merge of the first half's state and the second's, one of them st itself and the
// other parked in `slot`; each row's max is already its lanes' max, each sum a lane's part.
template <int D>
__device__ __forceinline__ void merge_parked_state(WarpState<D>& st, const float* slot,
                                                   bool st_is_first, float scale_log2) {
  const float* other = slot + threadIdx.x;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float parked_max = __ldcg(other + (D / 2 + h) * kThreads);
    const float parked_sum = __ldcg(other + (D / 2 + 2 + h) * kThreads);
    const float first_max = st_is_first ? st.max[h] : parked_max;
    const float second_max = st_is_first ? parked_max : st.max[h];
    const float row_max = fmaxf(first_max, second_max);
    const float ref = row_max == -INFINITY ? 0.0f : row_max * scale_log2;
    const float w_first = fast_exp2(first_max * scale_log2 - ref);
    const float w_second = fast_exp2(second_max * scale_log2 - ref);
    const float first_sum = st_is_first ? st.sum[h] : parked_sum;
    const float second_sum = st_is_first ? parked_sum : st.sum[h];
    st.sum[h] = __fadd_rn(__fmul_rn(first_sum, w_first), __fmul_rn(second_sum, w_second));
    st.max[h] = row_max;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int i = 4 * j + 2 * h + e;
        const float parked = __ldcg(other + i * kThreads);
        const float first = st_is_first ? st.o[i] : parked;
        const float second = st_is_first ? parked : st.o[i];
        st.o[i] = __fadd_rn(__fmul_rn(first, w_first), __fmul_rn(second, w_second));
      }
  }
}

// Grid: (num_heads / heads_per_block, query tiles x halves, sequences), halves 2 with a KeySplit
// (a query tile's two blocks adjacent) and 1 without; tiles run last to first, so the blocks with
// the most keys start first.
template <int D, bool kFp8>
__global__ void __launch_bounds__(kThreads, 1)
    flash_prefill_kernel(PagedAttentionParams p, int heads_per_block, KeySplit<D> split) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // wgmma needs sm_90a; the launcher picks this kernel on compute capability 9.x only
#else
  using L = Layout<D>;
  constexpr int kKeys = L::kKeys;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw_addr = shared_address(smem_raw);
  unsigned char* const q_smem = smem_raw + ((raw_addr + 1023) / 1024 * 1024 - raw_addr);
  unsigned char* const kv_smem = q_smem + L::kQBytes;
  const std::uint32_t q_addr = shared_address(q_smem), kv_addr = shared_address(kv_smem);
  const int warp = threadIdx.x / 32;

  const std::int64_t seq = blockIdx.z;
  const int halves = split.states != nullptr ? 2 : 1;
  const int half = static_cast<int>(blockIdx.y) % halves;
  const std::int64_t query_tiles = gridDim.y / halves, tile_rank = blockIdx.y / halves;
  BlockRows b;
  b.tokens_per_block = kRows / heads_per_block;
  b.m0 = static_cast<std::int32_t>((query_tiles - 1 - tile_rank) * b.tokens_per_block);
  b.first_token = p.query_start[seq];
  const std::int32_t query_len = p.query_start[seq + 1] - p.query_start[seq];
  if (b.m0 >= query_len) return;  // the whole block: past the sequence's new tokens
  const std::int32_t context_len = p.context_lens[seq];
  const bool valid = valid_ranges(query_len, context_len, p);
  b.tokens = min(b.tokens_per_block, query_len - b.m0);
  b.first_head = static_cast<int>(blockIdx.x) * heads_per_block;
  const std::int64_t kv_head = b.first_head / (p.num_heads / p.num_kv_heads);
  const std::int32_t first_pos = context_len - query_len + b.m0;  // of the block's first token

  constexpr int kKvBytes = kFp8 ? 1 : 2;
  KvSource kv;
  kv.key = static_cast<const unsigned char*>(p.key_cache) + kv_head * D * kKvBytes;
  kv.value = static_cast<const unsigned char*>(p.value_cache) + kv_head * D * kKvBytes;
  kv.key_scales = kFp8 ? p.key_scales : nullptr;
  kv.value_scales = kFp8 ? p.value_scales : nullptr;
  kv.block_table = p.block_tables + seq * p.max_blocks_per_seq;
  kv.row_bytes = p.num_kv_heads * D * kKvBytes;
  kv.scale_block_stride =
      static_cast<std::int32_t>(fp8_scale_index(1, 0, 0, p.num_kv_heads, p.block_size));
  kv.scale_head =
      static_cast<std::int32_t>(fp8_scale_index(0, 0, kv_head, p.num_kv_heads, p.block_size));
  kv.num_blocks = p.num_blocks;
  kv.block_size = static_cast<std::int32_t>(p.block_size);
  kv.num_keys = first_pos + b.tokens;  // up to the block's last token
  const int num_tiles = valid ? (kv.num_keys + kKeys - 1) / kKeys : 0;
  // This block's key tiles: all of them, or its half of a split query tile's.
  const bool split_tile = halves == 2 && num_tiles >= kMinSplitTiles;
  if (half == 1 && !split_tile) return;
  const int first_tile = split_tile && half == 1 ? (num_tiles + 1) / 2 : 0;
  const int end_tile = split_tile && half == 0 ? (num_tiles + 1) / 2 : num_tiles;

  // The warpgroup's rows: tokens group_token .. + min(64, tokens_per_block) - 1 (of one head, or
  // of two when a block holds 32 tokens); the warp's: 16 tokens of one head from
  // row0 % tokens_per_block, the first at position warp_pos.
  const int row0 = warp * 16;
  const int group_token = (warp / 4 * kGroupRows) % b.tokens_per_block;
  const int group_last_token = group_token + min(kGroupRows, b.tokens_per_block) - 1;
  const bool group_active = group_token < b.tokens;
  const std::int32_t group_pos = first_pos + group_token;
  const std::int32_t group_last_pos = min(first_pos + group_last_token, kv.num_keys - 1);
  const std::int32_t warp_pos = first_pos + row0 % b.tokens_per_block;

  bool bad = !valid;
  if (valid) load_q<D>(p, b, q_smem);
  cp_async_commit();
  [[maybe_unused]] Fp8Pieces<D> next;  // kFp8: tile t + 1, in flight while tile t is attended
  if (first_tile < end_tile) {
    if constexpr (kFp8) {
      load_fp8_tile<D>(kv, first_tile * kKeys, next, bad);
      store_fp8_tile<D>(next, kv_smem);
    } else {
      load_kv_tile<D>(kv, first_tile * kKeys, kv_smem, bad);
    }
  }
  cp_async_commit();

  WarpState<D> st;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    st.max[h] = -INFINITY;
    st.sum[h] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < D / 2; ++i) st.o[i] = 0.0f;
  const float scale_log2 = p.scale * kLog2e;
  for (int t = first_tile; t < end_tile; ++t) {
    // Refill the stage that tile t - 1 used (every warp is past it: the loop's last barrier).
    const int stage = (t - first_tile) % kStages;
    unsigned char* const next_stage = kv_smem + (stage + 1) % kStages * L::kStageBytes;
    if (t + 1 < end_tile) {
      if constexpr (kFp8)
        load_fp8_tile<D>(kv, (t + 1) * kKeys, next, bad);
      else
        load_kv_tile<D>(kv, (t + 1) * kKeys, next_stage, bad);
    }
    cp_async_commit();
    cp_async_wait<1>();  // tile t (and Q, the first group) is in
    // The tile was written through the generic proxy; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const std::int32_t n0 = t * kKeys;
    if (group_active && n0 <= group_last_pos)
      attend_tile<D>(st, q_addr, row0, kv_addr + stage * L::kStageBytes, n0, warp_pos,
                     n0 + kKeys - 1 > group_pos, scale_log2);
    if constexpr (kFp8)
      if (t + 1 < end_tile) store_fp8_tile<D>(next, next_stage);
    __syncthreads();
  }
  cp_async_wait<0>();
  bad = __syncthreads_or(bad);
  if (split_tile) {
    // Park this half's state, count it; the second half to arrive merges the first's.
    const std::int64_t unit = (seq * query_tiles + tile_rank) * gridDim.x + blockIdx.x;
    float* const slots = split.states + unit * 2 * (KeySplit<D>::kSlotBytes / 4);
    park_state<D>(st, slots + half * (KeySplit<D>::kSlotBytes / 4));
    if (threadIdx.x == 0) split.bad[2 * unit + half] = bad;
    __threadfence();  // the state is visible GPU-wide before the count says so
    __syncthreads();
    __shared__ bool second;
    if (threadIdx.x == 0) second = atomicAdd(split.counters + unit, 1) == 1;
    __syncthreads();
    if (!second) return;
    __threadfence();
    merge_parked_state<D>(st, slots + (1 - half) * (KeySplit<D>::kSlotBytes / 4), half == 0,
                          scale_log2);
    bad = bad || __ldcg(split.bad + 2 * unit + 1 - half) != 0;
    if (threadIdx.x == 0) split.counters[unit] = 0;  // ready for the next launch
  }
  if (row0 % b.tokens_per_block < b.tokens) store_rows<D>(st, p, b, q_smem, row0, bad);
#endif
}

// Whether the current device is a Hopper (compute capability 9.x), which the sm_90a build of the
// flash kernel runs on; the project builds sm_90a by default (meson option gpu_archs).
inline bool device_has_wgmma() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         major == 9;
}

// Whether the flash kernel takes these (checked) parameters; the generic kernel takes the rest.
inline bool flash_prefill_supported(const PagedAttentionParams& p) {
  const auto aligned = [](const void* ptr) {
    return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0;
  };
  return device_has_wgmma() && p.dtype == DType::bf16 &&
         (p.kv_dtype == DType::bf16 || p.kv_dtype == DType::fp8_e4m3) &&
         (p.head_dim == 64 || p.head_dim == 128) && p.scale > 0.0f &&
         p.num_seqs <= kMaxGridYZ && aligned(p.q) && aligned(p.key_cache) &&
         aligned(p.value_cache) && aligned(p.out) &&
         (p.max_query_len + kRows / 4 - 1) / (kRows / 4) <= kMaxGridYZ &&
         (p.kv_dtype != DType::fp8_e4m3 ||  // an fp8 scale's index is 32-bit
          fp8_scale_index(p.num_blocks, 0, 0, p.num_kv_heads, p.block_size) <= INT32_MAX);
}

// A launch's blocks before key splits: (head blocks, query tiles, sequences).
struct FlashGrid {
  int heads_per_block = 1;
  std::int64_t head_blocks = 0, query_tiles = 0;
};

inline FlashGrid flash_grid(const PagedAttentionParams& p) {
  FlashGrid g;
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  g.heads_per_block = group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
  const std::int64_t tokens_per_block = kRows / g.heads_per_block;
  g.head_blocks = p.num_heads / g.heads_per_block;
  g.query_tiles = (p.max_query_len + tokens_per_block - 1) / tokens_per_block;
  return g;
}

// Query tiles x head blocks x sequences when the launch splits keys (at most kMaxSplitWaves
// waves of one block per multiprocessor), else 0.
inline std::int64_t split_units(const PagedAttentionParams& p) {
  int sms = 0;
  if (current_sm_count(sms) != cudaSuccess) return 0;
  const FlashGrid g = flash_grid(p);
  const std::int64_t units = g.head_blocks * g.query_tiles * p.num_seqs;
  return units <= std::int64_t{kMaxSplitWaves} * sms ? units : 0;
}

template <int D, bool kFp8>
cudaError_t launch_flash_prefill_for(const PagedAttentionParams& p, cudaStream_t stream) {
  const FlashGrid g = flash_grid(p);
  // Splits where the workspace and the counters hold them all.
  KeySplit<D> split;
  const std::int64_t units =
      p.workspace != nullptr && p.split_counters != nullptr ? split_units(p) : 0;
  if (units > 0 && p.workspace_bytes >= KeySplit<D>::bytes(units) &&
      p.split_counter_count >= static_cast<std::size_t>(units)) {
    split.states = static_cast<float*>(p.workspace);
    split.bad = reinterpret_cast<int*>(static_cast<char*>(p.workspace) +
                                       units * 2 * KeySplit<D>::kSlotBytes);
    split.counters = p.split_counters;
  }
  const int halves = split.states != nullptr ? 2 : 1;
  if (g.query_tiles * halves > kMaxGridYZ) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(g.head_blocks), static_cast<unsigned>(g.query_tiles * halves),
                  static_cast<unsigned>(p.num_seqs));
  constexpr int kSmem = Layout<D>::kSmemBytes;
  if (const cudaError_t err = cudaFuncSetAttribute(
          flash_prefill_kernel<D, kFp8>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
      err != cudaSuccess)
    return err;
  flash_prefill_kernel<D, kFp8><<<grid, kThreads, kSmem, stream>>>(p, g.heads_per_block, split);
  return cudaGetLastError();
}

// prefill_attention_workspace_bytes and _split_counters for the flash kernel's shapes.
inline std::size_t flash_prefill_workspace_bytes(const PagedAttentionParams& p) {
  const std::int64_t units = split_units(p);
  return p.head_dim == 64 ? KeySplit<64>::bytes(units) : KeySplit<128>::bytes(units);
}
inline std::size_t flash_prefill_split_counters(const PagedAttentionParams& p) {
  return static_cast<std::size_t>(split_units(p));
}

inline cudaError_t launch_flash_prefill(const PagedAttentionParams& p, cudaStream_t stream) {
  const bool fp8 = p.kv_dtype == DType::fp8_e4m3;
  if (p.head_dim == 64)
    return fp8 ? launch_flash_prefill_for<64, true>(p, stream)
               : launch_flash_prefill_for<64, false>(p, stream);
  return fp8 ? launch_flash_prefill_for<128, true>(p, stream)
             : launch_flash_prefill_for<128, false>(p, stream);
}

}  // namespace minivllm::cuda::detail::flash
