// The prefill attention kernels against the CPU reference, on the shapes that pick each path:
// bf16 with head_dim 64 or 128 runs the flash kernel (its query tiles hold 128, 64 or 32 tokens
// for KV groups of 1, 2 or 4+ heads, its key tiles 128 keys), f32 and other head sizes the
// generic one. Ragged batches mix one-token sequences (first, as the
// engine orders them), whole prompts, prefix-cache hits and later chunks of a chunked prefill.
// Small launches split their longest query tiles' keys across two blocks (KeySplitsMatchReference).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cuda/paged_attention.cuh"
#include "paged_attention_batch.hpp"

namespace minivllm {
namespace {

using test::AttentionHeads;
using test::DeviceBuffer;
using test::PagedBatch;
using test::SequenceLens;

// Group sizes 1, 2, 4 and 8 at both fast head sizes, and the tiny models' sizes (generic path).
const AttentionHeads kFastHeads[] = {{"Qwen3-0.6B", 16, 8, 128},
                                     {"Llama-3.2-1B", 32, 8, 64},
                                     {"multi-head 128", 4, 4, 128},
                                     {"group of 8", 16, 2, 128},
                                     {"group of 2, 64", 4, 2, 64}};
const AttentionHeads kGenericHeads[] = {{"tiny qwen3", 4, 2, 32}, {"tiny llama", 4, 2, 16}};
constexpr std::int64_t kBlockSizes[] = {1, 16, 64, 256};
// Long prompts' tolerance (LongPromptsMatchReference says why).
constexpr float kBf16WeightsTolerance = 5e-2f;

class PrefillAttentionKernel : public test::CudaKernelTest {
 protected:
  // With `split`, the workspace and zeroed counters the launch asks for (key splits), poisoned
  // scratch, and the counters checked to come back zeroed.
  std::vector<float> run_gpu(const PagedBatch& b, DType dtype, bool split = false) {
    const test::DevicePagedBatch d(b, dtype);
    cuda::PagedAttentionParams p = d.params(b, dtype);
    const std::size_t counters = split ? cuda::prefill_attention_split_counters(p) : 0;
    DeviceBuffer d_workspace(split ? cuda::prefill_attention_workspace_bytes(p) : 0);
    test::poison(d_workspace);
    DeviceBuffer d_counters = test::upload_raw(std::vector<int>(counters, 0));
    if (split) {
      p.workspace = d_workspace.get();
      p.workspace_bytes = d_workspace.bytes();
      p.split_counters = d_counters.as<int>();
      p.split_counter_count = counters;
    }
    const cudaError_t err = cuda::launch_prefill_attention(p, nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(test::download_raw<int>(d_counters, counters), std::vector<int>(counters, 0))
        << "split counters left armed";
    return test::download(d.out, dtype, b.out_size());
  }

  // With `fp8` the cache is e4m3 codes and scales (test::quantize_cache), q and out `dtype`.
  void check(const AttentionHeads& heads, std::int64_t block_size,
             const std::vector<SequenceLens>& seqs, DType dtype, float tolerance,
             bool fp8 = false) {
    PagedBatch b = test::make_paged_batch(heads, block_size, seqs, dtype, rng());
    if (fp8) test::quantize_cache(b);
    SCOPED_TRACE((fp8 ? "fp8 cache, " : "") + test::describe(b, dtype));
    test::expect_close(run_gpu(b, dtype), test::paged_attention_reference(b), tolerance,
                       "prefill kernel");
  }
  void check(const AttentionHeads& heads, std::int64_t block_size,
             const std::vector<SequenceLens>& seqs, DType dtype) {
    check(heads, block_size, seqs, dtype, test::tolerance(dtype));
  }

  std::int32_t random_len(std::int32_t lo, std::int32_t hi) {
    return static_cast<std::int32_t>(random_int(lo, hi));
  }

  // Decode steps first, then prompts and chunks: lengths around the query tiles (32, 64, 128
  // tokens) and the key tile (64), contexts ending on and just past block boundaries.
  std::vector<SequenceLens> ragged_batch(std::int32_t block) {
    const std::int32_t prompt = random_len(2, 600), chunk = random_len(1, 300);
    return {
        {1, 1},                        // a one-token prompt
        {random_len(2, 700), 1},       // decode steps
        {2 * block + 1, 1},
        {block, block},                // a prompt filling its blocks exactly
        {block + 1, block + 1},        // just past a block boundary
        {127, 127}, {129, 129}, {65, 65}, {33, 33},
        {3 * block + 5, 7},            // a prefix-cache hit of 3 blocks and change
        {2 * block, block},            // a second prefill chunk ending on a boundary
        {4 * block + 100, 100},        // a later chunk, past several blocks
        {prompt + chunk, prompt},      // random
    };
  }
};

TEST_F(PrefillAttentionKernel, FastPathMatchesReference) {
  for (const AttentionHeads& heads : kFastHeads)
    for (std::int64_t bs : kBlockSizes)
      check(heads, bs, ragged_batch(static_cast<std::int32_t>(bs)), DType::bf16,
            test::flash_tolerance(DType::bf16));
}

TEST_F(PrefillAttentionKernel, GenericPathMatchesReference) {
  for (DType dtype : test::kElementTypes)
    for (const AttentionHeads& heads : kGenericHeads)
      for (std::int64_t bs : {std::int64_t{1}, std::int64_t{16}})
        check(heads, bs, ragged_batch(static_cast<std::int32_t>(bs)), dtype);
  for (const AttentionHeads& heads : kFastHeads)  // f32 at the fast sizes
    check(heads, 16, ragged_batch(16), DType::f32);
}

// Prompts and chunks up to 2k tokens: many query and key tiles per sequence. The flash kernel
// rounds the softmax weights to bf16 for the P V product (as flash attention does): an error of
// up to 2^-9 of each weight times |v| <= 2, which shows in the rows of few keys whose values
// cancel, against a tolerance scaled by the batch's rms output, small here (most rows average
// thousands of values). Wrong keys, masks or scaling are off by far more than 5%; the short
// batches above keep the 1% tolerance.
TEST_F(PrefillAttentionKernel, LongPromptsMatchReference) {
  for (const AttentionHeads& heads : {kFastHeads[0], kFastHeads[1]})
    for (std::int64_t bs : {16, 256})
      check(heads, bs,
            {{random_len(1, 900), 1},
             {2048, 2048},
             {1536 + 700, 700},  // a chunk after a 1.5k prefix
             {random_len(1000, 2000), random_len(1, 1000)}},
            DType::bf16, kBf16WeightsTolerance);
}

// An fp8 cache on every fast shape and block size, the ragged batch and long prompts, against the
// reference reading the same codes and scales. The kernel converts codes to bf16 exactly (4
// significant bits) and applies each token's scales once; the tolerances are the bf16 ones.
TEST_F(PrefillAttentionKernel, Fp8CacheMatchesReference) {
  for (const AttentionHeads& heads : kFastHeads)
    for (std::int64_t bs : {1, 7, 16, 64, 256})
      check(heads, bs, ragged_batch(static_cast<std::int32_t>(bs)), DType::bf16,
            test::flash_tolerance(DType::bf16), /*fp8=*/true);
  for (const AttentionHeads& heads : {kFastHeads[0], kFastHeads[1]})
    check(heads, 16, {{2048, 2048}, {1536 + 700, 700}, {random_len(1, 900), 1}}, DType::bf16,
          kBf16WeightsTolerance, /*fp8=*/true);
}

// An fp8 scale's index is 32-bit in the flash kernel: a cache past that range is refused, not read
// at a wrapped index.
TEST_F(PrefillAttentionKernel, Fp8CacheWhoseScalesPass32BitsIsRefused) {
  PagedBatch b = test::make_paged_batch(kFastHeads[0], 16, {{40, 40}}, DType::bf16, rng());
  test::quantize_cache(b);
  const test::DevicePagedBatch d(b, DType::bf16);
  cuda::PagedAttentionParams p = d.params(b, DType::bf16);
  ASSERT_EQ(cuda::launch_prefill_attention(p, nullptr), cudaSuccess);
  p.num_blocks = (std::int64_t{1} << 31) / (p.num_kv_heads * p.block_size) + 1;
  EXPECT_EQ(cuda::launch_prefill_attention(p, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
}

// Key splits (launches of at most two waves of blocks: the flash kernel halves the keys of query
// tiles with 4+ key tiles across two blocks and merges them): prompts of 1-2k tokens alone, a
// chunk after a long prefix, two sequences, an fp8 cache; each asks for a workspace (so splits
// run), and matches the reference and the unsplit launch within the long prompts' tolerance.
TEST_F(PrefillAttentionKernel, KeySplitsMatchReference) {
  struct Case {
    AttentionHeads heads;
    std::int64_t block_size;
    std::vector<SequenceLens> seqs;
    bool fp8;
  };
  const std::int32_t prompt = random_len(257, 2048);
  const Case cases[] = {
      {kFastHeads[0], 16, {{1024, 1024}}, false},
      {kFastHeads[0], 256, {{2048, 2048}}, false},
      {kFastHeads[0], 16, {{prompt, prompt}}, false},
      {kFastHeads[0], 16, {{1536 + 300, 300}, {random_len(300, 700), 200}}, false},
      {kFastHeads[2], 64, {{1000, 1000}}, false},   // a KV group of 1: 128-token query tiles
      {kFastHeads[4], 16, {{1200, 1200}}, false},   // head_dim 64: 128-key tiles
      {kFastHeads[0], 16, {{1024, 1024}}, true},
      {kFastHeads[4], 1, {{700, 700}}, true},
  };
  for (const Case& c : cases) {
    PagedBatch b = test::make_paged_batch(c.heads, c.block_size, c.seqs, DType::bf16, rng());
    if (c.fp8) test::quantize_cache(b);
    SCOPED_TRACE((c.fp8 ? "fp8 cache, " : "") + test::describe(b, DType::bf16));
    {
      const test::DevicePagedBatch d(b, DType::bf16);
      const cuda::PagedAttentionParams p = d.params(b, DType::bf16);
      EXPECT_GT(cuda::prefill_attention_workspace_bytes(p), 0u) << "a small launch should split";
      EXPECT_GT(cuda::prefill_attention_split_counters(p), 0u);
    }
    const auto want = test::paged_attention_reference(b);
    const auto split = run_gpu(b, DType::bf16, /*split=*/true);
    test::expect_close(split, want, kBf16WeightsTolerance, "split launch against the reference");
    // The halves' softmax weights are rounded to bf16 against their own running max: the same
    // bound as against the reference.
    test::expect_close(split, run_gpu(b, DType::bf16), kBf16WeightsTolerance,
                       "split launch against the unsplit one");
  }
  // A launch of many waves splits nothing.
  const PagedBatch many = test::make_paged_batch(
      kFastHeads[0], 16, std::vector<SequenceLens>(16, SequenceLens{2048, 2048}), DType::bf16,
      rng());
  const test::DevicePagedBatch d(many, DType::bf16);
  EXPECT_EQ(cuda::prefill_attention_workspace_bytes(d.params(many, DType::bf16)), 0u);
}

// A bad block table entry turns the rows whose keys reach it NaN (here the whole prompt: one
// query tile), never reads outside the cache, and leaves the other sequences right.
TEST_F(PrefillAttentionKernel, BlockOutsideCacheGivesNan) {
  for (const bool flash : {true, false}) {
    const AttentionHeads& heads = flash ? kFastHeads[0] : kGenericHeads[0];
    for (DType dtype : test::kElementTypes) {
      PagedBatch b = test::make_paged_batch(heads, 16, {{40, 40}, {70, 50}}, dtype, rng());
      SCOPED_TRACE(test::describe(b, dtype));
      const auto want = test::paged_attention_reference(b);
      b.block_tables[1] = static_cast<std::int32_t>(b.num_blocks);  // sequence 0's second block
      const auto got = run_gpu(b, dtype);
      const auto rows = static_cast<std::ptrdiff_t>(40 * heads.heads * heads.head_dim);
      const auto nans = std::count_if(got.begin() + rows / 2, got.begin() + rows,
                                      [](float x) { return std::isnan(x); });
      EXPECT_EQ(nans, rows / 2) << "sequence 0's tokens past its bad block";
      test::expect_close(std::vector<float>(got.begin() + rows, got.end()),
                         std::vector<float>(want.begin() + rows, want.end()),
                         flash ? test::flash_tolerance(dtype) : test::tolerance(dtype),
                         "the other sequence");
    }
  }
}

}  // namespace
}  // namespace minivllm
