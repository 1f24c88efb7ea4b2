// The shapes steps are replayed at (step_shapes.hpp) and their padding: which steps get a shape,
// and, on the CPU backend in f32 with tiny-qwen3, that a padded step gives the real step's logits
// rows bit for bit and leaves the KV cache as the real step does (its pads write nothing), step
// after step of a script of prefills and decodes. The CUDA graphs replay exactly these padded
// steps (test_cuda_step_runner holds them to the padded step's eager run on the GPU).
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "backend/cpu_ops.hpp"
#include "backend/step_shapes.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

constexpr std::int32_t kBlockSize = 4;

// Sequences of the given new-token counts after the given cached counts (fresh blocks from the
// top of a 1024-block cache).
Batch batch_of(const std::vector<std::pair<std::int32_t, std::int32_t>>& cached_and_new,
               LogitsFor logits = LogitsFor::last) {
  testing::BlockAllocator blocks(1024);
  BatchBuilder builder(kBlockSize);
  for (const auto& [cached, fresh] : cached_and_new) {
    const std::vector<std::int32_t> tokens(static_cast<std::size_t>(fresh), 7);
    const auto table = blocks.take((cached + fresh + kBlockSize - 1) / kBlockSize);
    builder.add(tokens, cached, table, logits);
  }
  return builder.build();
}

TEST(StepShapes, Buckets) {
  const std::vector<std::pair<std::int32_t, std::int32_t>> decode = {
      {1, 1}, {2, 2}, {3, 4}, {5, 8}, {8, 8}, {9, 16}, {17, 24}, {250, 256}, {256, 256}};
  for (const auto& [seqs, bucket] : decode) EXPECT_EQ(decode_bucket(seqs), bucket) << seqs;
  const std::vector<std::pair<std::int32_t, std::int32_t>> prefill = {
      {2, 4},    {4, 4},     {5, 8},     {33, 64},   {64, 64},
      {65, 128}, {128, 128}, {129, 192}, {449, 512}, {512, 512}, {513, 640}, {1024, 1024},
      {1025, 1152}, {2048, 2048}};
  for (const auto& [tokens, bucket] : prefill) EXPECT_EQ(prefill_bucket(tokens), bucket) << tokens;

  // What a runner prepares: every bucket a step up to the limit pads to, the straddling one too.
  using Buckets = std::vector<std::int32_t>;
  EXPECT_EQ(prefill_buckets(100, 4096), (Buckets{4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(prefill_buckets(128, 4096), (Buckets{4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(prefill_buckets(600, 4096),
            (Buckets{4, 8, 16, 32, 64, 128, 192, 256, 320, 384, 448, 512, 640}));
  EXPECT_EQ(prefill_buckets(512, 65), (Buckets{4, 8, 16, 32, 64}));  // what fits the width
  EXPECT_EQ(prefill_buckets(1 << 20, 1 << 20).back(), 2048);
  EXPECT_TRUE(prefill_buckets(0, 4096).empty());
  EXPECT_TRUE(prefill_buckets(1, 4096).empty());
}

TEST(StepShapes, DecodeAndSmallPrefillStepsHaveOne) {
  // Decodes: a bucket of sequences, one token and one logits row each.
  EXPECT_EQ(step_shape_of(batch_of({{5, 1}, {9, 1}, {2, 1}}), 512),
            (StepShape{4, 4, 4, 4, 1}));  // the widest table, 3 blocks, to a power of two
  // A prompt: a bucket of tokens, one pad sequence, at least the prepared width.
  EXPECT_EQ(step_shape_of(batch_of({{0, 100}}), 512), (StepShape{2, 128, 1, 32, 128}));
  EXPECT_EQ(step_shape_of(batch_of({{0, 100}}), 512, 64), (StepShape{2, 128, 1, 64, 128}));
  EXPECT_EQ(step_shape_of(batch_of({{0, 128}}), 512), (StepShape{2, 128, 1, 32, 128}));
  // After a prefix; two prompts, the second a single token; a chunk with no logits row.
  EXPECT_EQ(step_shape_of(batch_of({{40, 20}}), 512), (StepShape{2, 32, 1, 16, 32}));
  EXPECT_EQ(step_shape_of(batch_of({{0, 30}, {0, 1}}), 512), (StepShape{3, 32, 2, 8, 32}));
  EXPECT_EQ(step_shape_of(batch_of({{0, 30}}, LogitsFor::none), 512),
            (StepShape{2, 32, 0, 8, 32}));
  // A pad as long as the longest context (24 tokens: a pad of 8).
  EXPECT_EQ(step_shape_of(batch_of({{0, 8}, {0, 8}, {0, 8}}), 512),
            (StepShape{4, 32, 3, 2, 32}));

  // None: a decode first and a prompt after it (both attention kernels); five sequences; more
  // tokens than replayed; prefill graphs off; prompt logprobs; a pad longer than any context.
  EXPECT_EQ(step_shape_of(batch_of({{5, 1}, {0, 9}}), 512), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}}), 512), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{0, 300}}), 256), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{0, 2049}}), 4096), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{0, 9}}), 0), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{5, 1}, {9, 1}}), 0), (StepShape{2, 2, 2, 4, 1}));
  EXPECT_EQ(step_shape_of(batch_of({{0, 9}}, LogitsFor::all), 512), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of({{0, 9}, {0, 9}, {0, 9}, {0, 9}}), 512), std::nullopt);
  EXPECT_EQ(step_shape_of(batch_of(std::vector<std::pair<std::int32_t, std::int32_t>>(257, {3, 1})), 512),
            std::nullopt);

  // Arrays that disagree, or a logits row past the tokens: eager, where the ops' checks throw.
  Batch bad = batch_of({{0, 9}});
  bad.positions.pop_back();
  EXPECT_EQ(step_shape_of(bad, 512), std::nullopt);
  bad = batch_of({{0, 9}});
  bad.logits_rows = {9};
  EXPECT_EQ(step_shape_of(bad, 512), std::nullopt);
  bad = batch_of({{0, 9}, {0, 9}});
  bad.context_lens.pop_back();
  EXPECT_EQ(step_shape_of(bad, 512), std::nullopt);
  bad = batch_of({{2, 1}, {3, 1}});
  bad.block_tables.pop_back();
  EXPECT_EQ(step_shape_of(bad, 512), std::nullopt);
}

TEST(StepShapes, PaddingAppendsSequencesThatWriteNothing) {
  const Batch real = batch_of({{6, 5}});  // 5 new tokens after 6: bucket 8, a pad of 3
  const StepShape shape = *step_shape_of(real, 512);
  Batch padded;
  pad_step(real, shape, padded);
  EXPECT_EQ(padded.token_ids, (std::vector<std::int32_t>{7, 7, 7, 7, 7, 0, 0, 0}));
  EXPECT_EQ(padded.positions, (std::vector<std::int32_t>{6, 7, 8, 9, 10, 0, 1, 2}));
  EXPECT_EQ(padded.query_start, (std::vector<std::int32_t>{0, 5, 8}));
  EXPECT_EQ(padded.context_lens, (std::vector<std::int32_t>{11, 3}));
  EXPECT_EQ(padded.logits_rows, (std::vector<std::int32_t>{4}));
  for (std::size_t t = 5; t < 8; ++t) EXPECT_EQ(padded.slot_mapping[t], -1);
  ASSERT_EQ(padded.max_blocks_per_seq, 4);
  EXPECT_EQ(std::vector<std::int32_t>(padded.block_tables.begin() + 4, padded.block_tables.end()),
            (std::vector<std::int32_t>{0, 0, 0, 0}));

  // An empty batch padded to a prefill shape: a first pad of all but one token, then one.
  pad_step(Batch{}, prefill_shape(8, 2), padded);
  EXPECT_EQ(padded.query_start, (std::vector<std::int32_t>{0, 7, 8}));
  EXPECT_EQ(padded.logits_rows, (std::vector<std::int32_t>{6}));
  // And to a decode shape: one-token pads, each a logits row.
  pad_step(Batch{}, StepShape{4, 4, 4, 1, 1}, padded);
  EXPECT_EQ(padded.query_start, (std::vector<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(padded.logits_rows, (std::vector<std::int32_t>{0, 1, 2, 3}));

  EXPECT_THROW(pad_step(real, StepShape{2, 4, 1, 4, 4}, padded), Error);  // fewer tokens
  EXPECT_THROW(pad_step(real, StepShape{2, 8, 1, 2, 8}, padded), Error);  // narrower
}

class PaddedSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto dir = testing::make_tiny_checkpoint(dir_.path(), "tiny-qwen3", "qwen3");
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load({testing::plugin_dir()}));
    model_ = load_model(*registry_, dir, ops_);
  }

  std::vector<float> host(const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    ops_.to_host(t, out.data());
    return out;
  }

  testing::TempDir dir_{"step_shapes"};
  CpuOps ops_;
  std::unique_ptr<PluginRegistry> registry_;
  LoadedModel model_;
};

TEST_F(PaddedSteps, GiveTheRealRowsAndCacheOfTheStep) {
  constexpr std::int64_t kBlocks = 64;
  const KvCacheSpec spec = model_.model->kv_cache_spec();
  KvCacheView real_kv = allocate_kv_cache(ops_, spec, kBlocks, kBlockSize);
  KvCacheView padded_kv = allocate_kv_cache(ops_, spec, kBlocks, kBlockSize);
  const std::int64_t vocab = model_.config.vocab_size;

  // Six sequences: prompts alone and together, decodes, a chunk after a prefix, a chunk without
  // a logits row, a prompt exactly a bucket long, three prompts padded by their own length.
  struct Chunk {
    std::int32_t seq = 0, tokens = 0;
    LogitsFor logits = LogitsFor::last;
  };
  const std::vector<std::vector<Chunk>> script = {
      {{0, 13}},
      {{1, 5}, {2, 3}},
      {{0, 1}, {1, 1}, {2, 1}},
      {{0, 20, LogitsFor::none}},
      {{0, 9}},
      {{1, 1}, {0, 1}},
      {{2, 16}},
      {{3, 8}, {4, 8}, {5, 8}},  // a pad (8) as long as the longest context
  };
  testing::BlockAllocator blocks(kBlocks);
  std::vector<std::vector<std::int32_t>> tables(6);
  std::vector<std::int32_t> cached(6, 0);
  std::int32_t next_token = 11;
  std::size_t prefills = 0;
  for (std::size_t i = 0; i < script.size(); ++i) {
    const std::string where = "step " + std::to_string(i);
    BatchBuilder builder(kBlockSize);
    for (const Chunk& c : script[i]) {
      auto& table = tables[static_cast<std::size_t>(c.seq)];
      const std::int32_t needed = (cached[c.seq] + c.tokens + kBlockSize - 1) / kBlockSize;
      if (needed > static_cast<std::int32_t>(table.size())) {
        const auto more = blocks.take(needed - static_cast<std::int64_t>(table.size()));
        table.insert(table.end(), more.begin(), more.end());
      }
      std::vector<std::int32_t> tokens(static_cast<std::size_t>(c.tokens));
      for (auto& t : tokens) t = next_token++ % static_cast<std::int32_t>(vocab);
      builder.add(tokens, cached[c.seq], table, c.logits);
      cached[c.seq] += c.tokens;
    }
    const Batch batch = builder.build();
    const std::optional<StepShape> shape = step_shape_of(batch, 512, 8);
    ASSERT_TRUE(shape.has_value()) << where;
    prefills += shape->max_query_len > 1;
    Batch padded;
    pad_step(batch, *shape, padded);

    const std::vector<float> want = host(model_.model->forward(batch, real_kv));
    std::vector<float> got = host(model_.model->forward(padded, padded_kv));
    ASSERT_EQ(got.size(), static_cast<std::size_t>(shape->logits_rows * vocab)) << where;
    got.resize(want.size());  // the pad rows come last
    // Bit for bit (a step without logits rows has none to compare).
    EXPECT_TRUE(want.empty() ||
                std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0)
        << where;
    for (std::size_t l = 0; l < real_kv.keys.size(); ++l) {
      const Tensor* pairs[][2] = {{&real_kv.keys[l], &padded_kv.keys[l]},
                                  {&real_kv.values[l], &padded_kv.values[l]}};
      for (const auto& pair : pairs)
        EXPECT_EQ(std::memcmp(pair[0]->data(), pair[1]->data(), pair[0]->nbytes()), 0)
            << where << " layer " << l;
    }
  }
  EXPECT_EQ(prefills, 6u);
}

}  // namespace
}  // namespace minivllm
