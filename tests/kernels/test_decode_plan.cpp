// The decode-attention launch plan (kernels/cuda/decode_plan.hpp), host code without CUDA: how
// many splits a launch takes and how long they are, for the shapes the engine gives it. The GPU
// tests (test_cuda_paged_attention) check that every plan computes the reference; these pin which
// plan a shape gets. 132 multiprocessors, as on the H100 and H200: 528 block slots.
#include <cstddef>
#include <cstdint>
#include <utility>

#include <gtest/gtest.h>

#include "kernels/cuda/decode_plan.hpp"

namespace minivllm::cuda::decode {
namespace {

constexpr int kSms = 132;

// Qwen3-0.6B's heads (16 query heads, 8 KV heads, head_dim 128), bf16.
DecodeShape qwen3(std::int64_t num_seqs, std::int64_t block_size, std::int64_t width,
                  bool total_context = true) {
  DecodeShape s;
  s.num_seqs = num_seqs;
  s.num_heads = 16;
  s.num_kv_heads = 8;
  s.head_dim = 128;
  s.block_size = block_size;
  s.max_blocks_per_seq = width;
  s.total_context = total_context;
  return s;
}

// A workspace of `splits` partial states for every query head of the batch.
std::size_t workspace_for(const DecodeShape& s, std::int64_t splits) {
  return static_cast<std::size_t>(splits * s.num_seqs * s.num_heads * (s.head_dim + 2) * 4);
}

TEST(DecodePlan, LargeBatchesTakeOneSplit) {
  // throughput-256's steps: 2,048 blocks, nearly four waves.
  const DecodePlan plan = make_plan(qwen3(256, 256, 8), kSms, SIZE_MAX);
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_FALSE(plan.balanced);
  EXPECT_EQ(plan.keys_per_split, 2048);
}

TEST(DecodePlan, SmallBatchesSplitToFillAWave) {
  // One sequence of 8k keys: 8 blocks want 66 splits each; at most 64, of 128 keys (32 KiB).
  const DecodePlan one = make_plan(qwen3(1, 16, 512), kSms, SIZE_MAX);
  EXPECT_EQ(one.num_splits, kMaxSplits);
  EXPECT_EQ(one.keys_per_split, 128);
  EXPECT_FALSE(one.balanced);
  // A 1k context: splits no shorter than 32 KiB of keys and values (64 keys of 512 bytes).
  const DecodePlan short_one = make_plan(qwen3(1, 16, 64), kSms, SIZE_MAX);
  EXPECT_EQ(short_one.num_splits, 16);
  EXPECT_EQ(short_one.keys_per_split, 64);
  // Eight sequences: 64 blocks, 8 splits each.
  EXPECT_EQ(make_plan(qwen3(8, 256, 32), kSms, SIZE_MAX).num_splits, 8);
}

TEST(DecodePlan, OneWaveBatchesGetBalancedSplits) {
  // 60 sequences in a table 2,048 keys wide: two balanced splits of at least half the width.
  const DecodePlan narrow = make_plan(qwen3(60, 16, 128), kSms, SIZE_MAX);
  EXPECT_TRUE(narrow.balanced);
  EXPECT_EQ(narrow.slots, kSms * kCtasPerSm);
  EXPECT_EQ(narrow.num_splits, 2);
  EXPECT_EQ(narrow.keys_per_split, 1024);
  // The long workload's steps: 48 sequences in a graph's table of 64 blocks of 256 (16,384
  // keys, twice the longest context): four splits of a quarter of the width, so that a sequence
  // of 4-8.7k keys is cut in two or three.
  const DecodePlan wide = make_plan(qwen3(48, 256, 64), kSms, SIZE_MAX);
  EXPECT_TRUE(wide.balanced);
  EXPECT_EQ(wide.num_splits, 4);
  EXPECT_EQ(wide.keys_per_split, 4096);
  // Without the step's total context nothing balances: one split a sequence.
  const DecodePlan unbalanced = make_plan(qwen3(48, 256, 64, false), kSms, SIZE_MAX);
  EXPECT_FALSE(unbalanced.balanced);
  EXPECT_EQ(unbalanced.num_splits, 1);
}

TEST(DecodePlan, WideSplitsKeepTheirFloor) {
  // 3,072 keys of width: four splits would be 768 keys; the floor is min(half, 1,024) = 1,024,
  // so three.
  const DecodePlan plan = make_plan(qwen3(48, 16, 192), kSms, SIZE_MAX);
  EXPECT_TRUE(plan.balanced);
  EXPECT_EQ(plan.keys_per_split, kBalancedMinKeys);
  EXPECT_EQ(plan.num_splits, 3);
}

TEST(DecodePlan, TheWorkspaceBoundsTheSplits) {
  const DecodeShape wide = qwen3(48, 256, 64);
  const DecodePlan two = make_plan(wide, kSms, workspace_for(wide, 2));
  EXPECT_EQ(two.num_splits, 2);
  EXPECT_EQ(two.keys_per_split, 8192);
  const DecodePlan none = make_plan(wide, kSms, workspace_for(wide, 1));
  EXPECT_FALSE(none.balanced);
  EXPECT_EQ(none.num_splits, 1);
  const DecodeShape one = qwen3(1, 16, 512);
  EXPECT_EQ(make_plan(one, kSms, 0).num_splits, 1);
  EXPECT_EQ(make_plan(one, kSms, workspace_for(one, 5)).num_splits, 5);
}

TEST(DecodePlan, AnFp8CacheSplitsAsBf16Does) {
  DecodeShape fp8 = qwen3(1, 16, 512);
  fp8.kv_dtype = DType::fp8_e4m3;
  const DecodePlan plan = make_plan(fp8, kSms, SIZE_MAX);
  EXPECT_EQ(plan.keys_per_step, kTileKeys);
  EXPECT_EQ(plan.num_splits, kMaxSplits);
  EXPECT_EQ(plan.keys_per_split, 128);
}

TEST(DecodePlan, AnFp8BatchUnderHalfAWaveTakesTwiceTheSplits) {
  // The long workload's tail: 16 sequences in a graph's table of 64 blocks of 256 (16,384 keys).
  // bf16: 128 blocks want 4 splits of 4,096 keys; fp8: 8 balanced ones of 2,048.
  DecodeShape tail = qwen3(16, 256, 64);
  const DecodePlan bf16 = make_plan(tail, kSms, SIZE_MAX);
  EXPECT_EQ(bf16.num_splits, 4);
  EXPECT_FALSE(bf16.balanced);
  tail.kv_dtype = DType::fp8_e4m3;
  const DecodePlan fp8 = make_plan(tail, kSms, SIZE_MAX);
  EXPECT_EQ(fp8.num_splits, 8);
  EXPECT_EQ(fp8.keys_per_split, 2048);
  EXPECT_TRUE(fp8.balanced);
  EXPECT_EQ(fp8.slots, kSms * kCtasPerSm);
  // Splits stay at least kBalancedMinKeys: 8 sequences double to 16 of 1,024 keys ...
  DecodeShape eight = qwen3(8, 256, 64);
  eight.kv_dtype = DType::fp8_e4m3;
  EXPECT_EQ(make_plan(eight, kSms, SIZE_MAX).num_splits, 16);
  EXPECT_EQ(make_plan(eight, kSms, SIZE_MAX).keys_per_split, kBalancedMinKeys);
  // ... and 8 sequences of a 1k table keep their 8 splits of 128 keys, as bf16's.
  DecodeShape short_eight = qwen3(8, 256, 4);
  short_eight.kv_dtype = DType::fp8_e4m3;
  const DecodePlan short_plan = make_plan(short_eight, kSms, SIZE_MAX);
  EXPECT_EQ(short_plan.num_splits, 8);
  EXPECT_FALSE(short_plan.balanced);
  // Without the step's total context, or with a workspace of 4 splits, fp8 keeps bf16's plan.
  DecodeShape unknown = qwen3(16, 256, 64, false);
  unknown.kv_dtype = DType::fp8_e4m3;
  EXPECT_EQ(make_plan(unknown, kSms, SIZE_MAX).num_splits, 4);
  EXPECT_EQ(make_plan(tail, kSms, workspace_for(tail, 4)).num_splits, 4);
}

TEST(DecodePlan, StepsFollowTheHeadAndTheBlocks) {
  // bf16, head_dim 128: 16 lanes a key, two keys a pass, four passes a step.
  const DecodePlan bf16 = make_plan(qwen3(256, 16, 8), kSms, SIZE_MAX);
  EXPECT_EQ(bf16.lanes_per_key_log2, 4);
  EXPECT_EQ(bf16.keys_per_step, 8);
  EXPECT_TRUE(bf16.block_aligned);
  EXPECT_EQ(bf16.block_shift, 4);
  // f32, head_dim 64: 16 lanes a key too.
  DecodeShape f32 = qwen3(256, 7, 8);
  f32.q_dtype = f32.kv_dtype = DType::f32;
  f32.head_dim = 64;
  const DecodePlan odd = make_plan(f32, kSms, SIZE_MAX);
  EXPECT_EQ(odd.lanes_per_key_log2, 4);
  EXPECT_FALSE(odd.block_aligned);  // 7-token blocks: a step of 8 keys crosses them
  EXPECT_EQ(odd.block_shift, -1);
}

TEST(DecodePlan, LargeGroupsTakeSeveralBlocks) {
  DecodeShape s = qwen3(4, 16, 64);
  for (const auto& [heads, chunks] : {std::pair{8, 1}, std::pair{16, 1}, std::pair{24, 1},
                                     std::pair{32, 1}, std::pair{64, 2}}) {
    s.num_heads = heads;
    EXPECT_EQ(make_plan(s, kSms, SIZE_MAX).head_chunks, chunks) << heads << " heads";
  }
}

TEST(DecodePlan, SplitsCoverTheTableInWholeSteps) {
  for (const std::int64_t seqs : {1, 3, 8, 17, 48, 64, 66, 67, 100, 256})
    for (const std::int64_t block_size : {1, 16, 256})
      for (const std::int64_t width : {1, 2, 7, 64, 513})
        for (const bool total : {false, true}) {
          const DecodePlan plan = make_plan(qwen3(seqs, block_size, width, total), kSms, SIZE_MAX);
          const std::int64_t capacity = width * block_size;
          SCOPED_TRACE(testing::Message() << seqs << " seqs, width " << width << " x "
                                          << block_size << (total ? ", total" : ""));
          EXPECT_EQ(plan.keys_per_split % (kWarps * plan.keys_per_step), 0);
          EXPECT_GE(plan.num_splits * plan.keys_per_split, capacity);
          EXPECT_LT((plan.num_splits - 1) * plan.keys_per_split, capacity);
          EXPECT_LE(plan.num_splits, kMaxSplits);
        }
}

}  // namespace
}  // namespace minivllm::cuda::decode
