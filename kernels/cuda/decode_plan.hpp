#pragma once
// How a decode-attention launch (kernels/cuda/decode_attention.cu) cuts its work: blocks per KV
// head, splits of the context and their length. Host code without CUDA, so that the CPU tests
// pin the plan (tests/kernels/test_decode_plan.cpp); the kernels read the same DecodePlan.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda::decode {

inline constexpr int kWarps = 4;
inline constexpr int kCtasPerSm = 4;  // what the launch bounds allow (registers: up to 128)
inline constexpr int kPassesPerStep = 4;
inline constexpr int kTileKeys = 16;  // an fp8 warp step: the keys of an MMA's A operand
inline constexpr int kMaxRows = 4;    // query heads per block; larger groups take several blocks
inline constexpr int kMaxSplits = 64;
// A split streams at least this many bytes of keys and values (counted in the query's dtype):
// its fixed costs (loading the query, the first table and key round trips, the merge) stay small
// beside it.
// 32 KiB: one decode of a 1k context then runs on 128 blocks, not 32 (single-stream decode is
// latency bound, and a block streams only ~10-20 GB/s).
inline constexpr std::int64_t kMinSplitBytes = 32 << 10;
// A balanced plan's shortest split in keys where the capacity allows more than two (make_plan).
inline constexpr std::int64_t kBalancedMinKeys = 1024;

// The shapes a plan depends on: PagedAttentionParams' host-side fields.
struct DecodeShape {
  DType q_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  std::int64_t num_seqs = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t block_size = 0;
  std::int64_t max_blocks_per_seq = 0;  // the table's width: the plan's capacity
  bool total_context = false;           // the step's total context is given (balanced splits)
};

// How a launch cuts the work; the same on the host and in both kernels.
struct DecodePlan {
  int lanes_per_key_log2 = 0;     // bf16 and f32 caches
  int keys_per_step = 0;          // one warp's step
  int head_chunks = 1;            // blocks per KV head: ceil(group / rows per block)
  int num_splits = 1;
  std::int64_t keys_per_split = 0;  // a multiple of kWarps * keys_per_step
  // Balanced (one wave, two to four splits): keys_per_split grows to the step's total context
  // spread over `slots` blocks (balance() in decode_attention.cu), so sequences split only where
  // lengths are uneven.
  bool balanced = false;
  std::int64_t slots = 0;
  bool block_aligned = false;     // a step never crosses a cache block
  int block_shift = -1;           // log2(block_size) when a power of two
  float* partial_acc = nullptr;   // [num_seqs, num_heads, num_splits, head_dim]
  float* partial_max_sum = nullptr;  // [num_seqs, num_heads, num_splits, 2]
};

// Query heads per block for a group size.
inline int rows_per_block(std::int64_t group) {
  return group <= 2 ? static_cast<int>(group) : kMaxRows;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The plan for shapes that passed check_attention_params, on a device with `sm_count`
// multiprocessors, with `workspace_bytes` of workspace (SIZE_MAX: as much as it wants).
inline DecodePlan make_plan(const DecodeShape& p, int sm_count, std::size_t workspace_bytes) {
  DecodePlan plan;
  if (p.kv_dtype == DType::fp8_e4m3) {
    plan.keys_per_step = kTileKeys;
  } else {
    const std::int64_t pieces = ceil_div(p.head_dim, 16 / dtype_size(p.kv_dtype));  // of a row
    while ((std::int64_t{1} << plan.lanes_per_key_log2) < pieces) ++plan.lanes_per_key_log2;
    plan.keys_per_step = kPassesPerStep * (32 >> plan.lanes_per_key_log2);
  }
  plan.block_aligned = p.block_size % plan.keys_per_step == 0;
  if ((p.block_size & (p.block_size - 1)) == 0) {
    plan.block_shift = 0;
    while ((std::int64_t{1} << plan.block_shift) < p.block_size) ++plan.block_shift;
  }
  plan.head_chunks = static_cast<int>(ceil_div(p.num_heads / p.num_kv_heads,
                                               rows_per_block(p.num_heads / p.num_kv_heads)));

  // Enough blocks for one full wave of the GPU, if the contexts are long enough to split.
  const std::int64_t round = std::int64_t{kWarps} * plan.keys_per_step;
  const std::int64_t max_context =
      std::max<std::int64_t>(1, std::min<std::int64_t>(p.max_blocks_per_seq * p.block_size,
                                                       0x7FFFFFFF));
  const std::int64_t units = p.num_seqs * p.num_kv_heads * plan.head_chunks;
  const std::int64_t slots = std::int64_t{sm_count} * kCtasPerSm;
  // In keys of the query's dtype: a block streams keys at a rate set by its work per key more
  // than by their bytes, so an fp8 cache splits as a bf16 one does.
  const std::int64_t split_bytes =
      2 * p.head_dim * static_cast<std::int64_t>(dtype_size(p.q_dtype));
  const std::int64_t min_split_keys = ceil_div(kMinSplitBytes, split_bytes);
  const std::int64_t partial_bytes = p.num_seqs * p.num_heads * (p.head_dim + 2) * 4;
  const std::int64_t workspace_splits =
      static_cast<std::int64_t>(workspace_bytes / std::max<std::int64_t>(partial_bytes, 1));
  std::int64_t splits = units >= slots / 2 ? 1 : slots / std::max<std::int64_t>(units, 1);
  splits = std::min({splits, ceil_div(max_context, min_split_keys), std::int64_t{kMaxSplits},
                     workspace_splits});
  splits = std::max<std::int64_t>(splits, 1);
  // One split each in at most one wave: the longest sequence sets the kernel's time. Splits
  // whose length follows the step's total context (balance) halve that in a batch of uneven
  // lengths and leave an even batch at one split per sequence (its later blocks exit). Two of
  // them are at least half the capacity, and a graph's capacity is its width, a power of two of
  // blocks up to twice the longest context: there every sequence would keep one split. So above
  // 2 x kBalancedMinKeys they may be four, at least a quarter of the capacity and the lesser of
  // half of it and kBalancedMinKeys.
  if (splits == 1 && units <= slots && p.total_context &&
      max_context >= 2 * min_split_keys && workspace_splits >= 2) {
    splits = max_context > 2 * kBalancedMinKeys ? std::min<std::int64_t>(4, workspace_splits) : 2;
    plan.balanced = true;
    plan.slots = slots;
  }
  // An fp8 batch under half a wave takes up to twice its splits, each at least kBalancedMinKeys
  // long and balanced on the total context. A block streams an fp8 cache's keys at about the rate
  // it streams bf16 ones, so half the bytes: a launch that leaves slots empty needs more blocks
  // to keep HBM busy. Long-context batches of 8-32 rows read at 65-85 % of copy instead of
  // 53-78 % (H100, 2026-12-06); short contexts keep their splits (max_context / kBalancedMinKeys).
  if (p.kv_dtype == DType::fp8_e4m3 && splits > 1 && units < slots / 2 && p.total_context) {
    const std::int64_t wide = std::min({2 * splits, max_context / kBalancedMinKeys,
                                        std::int64_t{kMaxSplits}, workspace_splits});
    if (wide > splits) {
      splits = wide;
      plan.balanced = true;
      plan.slots = slots;
    }
  }
  plan.keys_per_split = ceil_div(ceil_div(max_context, splits), round) * round;
  if (plan.balanced && splits > 2) {  // the wide plan's floor
    const std::int64_t least = std::min(ceil_div(max_context, 2), kBalancedMinKeys);
    plan.keys_per_split = std::max(plan.keys_per_split, ceil_div(least, round) * round);
  }
  plan.num_splits = static_cast<int>(ceil_div(max_context, plan.keys_per_split));
  return plan;
}

}  // namespace minivllm::cuda::decode
