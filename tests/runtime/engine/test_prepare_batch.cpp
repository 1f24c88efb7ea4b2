// prepare_batch turns a StepPlan into the model's Batch in place, refilling the vectors of the
// step before (their capacity kept). Every refill must equal the Batch that BatchBuilder, the
// reference, builds afresh from the same sequences: after a larger step, a smaller one leaves
// nothing of it behind (block-table padding, logits rows).
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/batch.hpp>

#include "engine/block_manager.hpp"
#include "engine/prepare_batch.hpp"
#include "expect_batch_equal.hpp"
#include "model/batch_builder.hpp"

namespace minivllm {
namespace {

constexpr int kBlockSize = 4;

struct Step {
  std::vector<std::unique_ptr<Sequence>> seqs;
  StepPlan plan;
};

// num_seqs sequences of random lengths, each computing a random tail of its tokens: decodes,
// prefill chunks, and now and then one that wants prompt logits or does not sample.
Step random_step(std::mt19937& rng, int num_seqs, std::int32_t first_block, int block_size) {
  Step step;
  auto params = std::make_shared<const SamplingParams>();
  std::int32_t next_block = first_block;
  for (int i = 0; i < num_seqs; ++i) {
    const int num_tokens = 1 + static_cast<int>(rng() % 40);
    std::vector<std::int32_t> tokens(num_tokens);
    for (std::int32_t& t : tokens) t = static_cast<std::int32_t>(rng() % 1000);
    auto seq = std::make_unique<Sequence>(i, "r", 0, tokens, params, 0);
    const int num_new = rng() % 2 ? 1 : 1 + static_cast<int>(rng() % num_tokens);
    const int start = num_tokens - num_new;
    // Blocks for every token computed after the step, as the scheduler allocates them.
    const int num_blocks = BlockManager::blocks_for(num_tokens, block_size);
    for (int b = 0; b < num_blocks; ++b) seq->block_ids.push_back(next_block++);
    ScheduledSequence& s = step.plan.seqs.emplace_back();
    s.seq = seq.get();
    s.start = start;
    s.num_new_tokens = num_new;
    s.sample = rng() % 8 != 0;
    s.prompt_logits = rng() % 6 == 0;
    step.plan.num_batched_tokens += num_new;
    step.seqs.push_back(std::move(seq));
  }
  return step;
}

Batch reference_batch(const StepPlan& plan, int block_size) {
  BatchBuilder builder(block_size);
  for (const ScheduledSequence& s : plan.seqs) {
    const LogitsFor logits =
        s.prompt_logits ? LogitsFor::all : (s.sample ? LogitsFor::last : LogitsFor::none);
    builder.add(s.seq->token_ids().subspan(s.start, s.num_new_tokens), s.start,
                s.seq->block_ids, logits);
  }
  return builder.build();
}

// Block sizes that are powers of two (a shift and a mask per token) and one that is not.
TEST(PrepareBatch, RefillsEqualFreshBatchesFromTheReference) {
  std::mt19937 rng(5);
  for (const int block_size : {kBlockSize, 3, 16}) {
    Batch batch;  // reused across steps, as the scheduler reuses a returned step's batch
    for (const int num_seqs : {12, 3, 30, 1, 7, 30, 2}) {
      SCOPED_TRACE("block size " + std::to_string(block_size) + ", step of " +
                   std::to_string(num_seqs) + " sequences");
      const Step step =
          random_step(rng, num_seqs, static_cast<std::int32_t>(rng() % 50), block_size);
      prepare_batch(step.plan, block_size, batch);
      testing::expect_batch_equal(batch, reference_batch(step.plan, block_size));
    }
  }
}

TEST(PrepareBatch, AllDecodeStep) {
  auto params = std::make_shared<const SamplingParams>();
  Sequence a(0, "a", 0, {5, 6, 7, 8, 9}, params, 0);  // 5 tokens: positions 0..4
  Sequence b(1, "b", 0, {3, 4}, params, 0);
  a.block_ids.push_back(7);
  a.block_ids.push_back(2);
  b.block_ids.push_back(4);
  StepPlan plan;
  plan.seqs = {{&a, 4, 1, true, false}, {&b, 1, 1, true, false}};
  plan.num_batched_tokens = 2;
  Batch batch;
  prepare_batch(plan, kBlockSize, batch);
  EXPECT_EQ(batch.token_ids, (std::vector<std::int32_t>{9, 4}));
  EXPECT_EQ(batch.positions, (std::vector<std::int32_t>{4, 1}));
  EXPECT_EQ(batch.slot_mapping, (std::vector<std::int64_t>{8, 17}));  // block 2 slot 0, block 4 slot 1
  EXPECT_EQ(batch.query_start, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(batch.context_lens, (std::vector<std::int32_t>{5, 2}));
  EXPECT_EQ(batch.max_blocks_per_seq, 2);
  EXPECT_EQ(batch.block_tables, (std::vector<std::int32_t>{7, 2, 4, -1}));
  EXPECT_EQ(batch.logits_rows, (std::vector<std::int32_t>{0, 1}));
}

}  // namespace
}  // namespace minivllm
