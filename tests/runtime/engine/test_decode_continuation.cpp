// A decode step told as a change of the one before it (decode_continuation.hpp): the batch the
// worker builds from the previous batch must equal the one prepare_batch builds from the plan,
// whatever rows leave, whichever rows open a new block (past the old table width too), and at
// block sizes 1, 3 and 16; steps that do not continue their predecessor are refused.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/batch.hpp>

#include "engine/block_manager.hpp"
#include "engine/decode_continuation.hpp"
#include "engine/prepare_batch.hpp"
#include "expect_batch_equal.hpp"

namespace minivllm {
namespace {

struct Decodes {
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::int32_t next_block = 0;
  int block_size = 0;

  // A step decoding every sequence whose index `keep` allows, at its last token.
  template <class Keep>
  StepPlan step(Keep keep) const {
    StepPlan plan;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (!keep(i)) continue;
      ScheduledSequence& s = plan.seqs.emplace_back();
      s.seq = seqs[i].get();
      s.start = seqs[i]->num_tokens() - 1;
      s.num_new_tokens = 1;
      s.sample = true;
      ++plan.num_batched_tokens;
    }
    return plan;
  }
  // One more token for every sequence, with the block its position opens.
  void grow() {
    for (auto& seq : seqs) {
      seq->append_token(7);
      if ((seq->num_tokens() - 1) % block_size == 0) seq->block_ids.push_back(next_block++);
    }
  }
};

Decodes random_decodes(std::mt19937& rng, int num_seqs, int block_size) {
  Decodes d;
  d.block_size = block_size;
  auto params = std::make_shared<const SamplingParams>();
  for (int i = 0; i < num_seqs; ++i) {
    std::vector<std::int32_t> tokens(1 + rng() % 50);
    for (std::int32_t& t : tokens) t = static_cast<std::int32_t>(rng() % 1000);
    auto seq = std::make_unique<Sequence>(i, "r", 0, tokens, params, 0);
    for (int b = 0; b < BlockManager::blocks_for(seq->num_tokens(), block_size); ++b)
      seq->block_ids.push_back(d.next_block++);
    d.seqs.push_back(std::move(seq));
  }
  return d;
}

TEST(DecodeContinuation, BuildsWhatPrepareBatchBuilds) {
  std::mt19937 rng(9);
  for (const int block_size : {1, 3, 16}) {
    for (int trial = 0; trial < 40; ++trial) {
      SCOPED_TRACE("block size " + std::to_string(block_size) + " trial " +
                   std::to_string(trial));
      Decodes d = random_decodes(rng, 1 + static_cast<int>(rng() % 20), block_size);
      std::vector<bool> stays(d.seqs.size());
      for (std::size_t i = 0; i < stays.size(); ++i) stays[i] = trial % 4 == 0 || rng() % 4 != 0;
      const StepPlan previous = d.step([](std::size_t) { return true; });
      Batch previous_batch;
      prepare_batch(previous, block_size, previous_batch);
      d.grow();
      const StepPlan next = d.step([&](std::size_t i) { return stays[i]; });

      DecodeContinuation c;
      ASSERT_TRUE(describe_continuation(previous, next, block_size, c));
      Batch got, want;
      continue_batch(previous_batch, c, got);
      prepare_batch(next, block_size, want);
      want.token_ids.assign(next.seqs.size(), -1);  // placeholders: the worker fills them in
      testing::expect_batch_equal(got, want);
    }
  }
}

TEST(DecodeContinuation, RefusesStepsThatDoNotContinue) {
  std::mt19937 rng(3);
  Decodes d = random_decodes(rng, 4, 4);
  const StepPlan previous = d.step([](std::size_t i) { return i != 2; });
  d.grow();
  DecodeContinuation c;
  // A sequence the previous step did not decode.
  EXPECT_FALSE(describe_continuation(previous, d.step([](std::size_t) { return true; }), 4, c));
  // Not one position on (the step before it again).
  EXPECT_FALSE(describe_continuation(previous, previous, 4, c));
  // A row that does not sample one token.
  StepPlan chunk = d.step([](std::size_t i) { return i != 2; });
  chunk.seqs[1].num_new_tokens = 2;
  chunk.seqs[1].start -= 1;
  EXPECT_FALSE(describe_continuation(previous, chunk, 4, c));
  StepPlan logits = d.step([](std::size_t i) { return i != 2; });
  logits.seqs[0].prompt_logits = true;
  EXPECT_FALSE(describe_continuation(previous, logits, 4, c));
  // Out of order.
  StepPlan swapped = d.step([](std::size_t i) { return i != 2; });
  std::swap(swapped.seqs[0], swapped.seqs[1]);
  EXPECT_FALSE(describe_continuation(previous, swapped, 4, c));
  // And the plain one continues.
  EXPECT_TRUE(describe_continuation(previous, d.step([](std::size_t i) { return i != 2; }), 4, c));
  EXPECT_TRUE(c.removed_rows.empty());
}

}  // namespace
}  // namespace minivllm
