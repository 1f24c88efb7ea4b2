#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <minivllm/error.hpp>

#include "error_message.hpp"
#include "engine/scheduler.hpp"

namespace minivllm {
namespace {

constexpr int kBlockSize = 4;

// Owns sequences and plays the model: each sampled sequence gets token 1 and stops at max_tokens.
struct Harness {
  Harness(SchedulerConfig config, int num_blocks, bool prefix_caching = false)
      : scheduler(config, CacheConfig{kBlockSize, num_blocks, prefix_caching}) {}

  Sequence* add(int prompt_len, int max_tokens = 16, int first_token = 100) {
    SamplingParams p;
    p.max_tokens = max_tokens;
    std::vector<std::int32_t> prompt(prompt_len);
    for (int i = 0; i < prompt_len; ++i) prompt[i] = first_token + i;
    seqs.push_back(std::make_unique<Sequence>(seqs.size(), "r" + std::to_string(seqs.size()), 0,
                                              prompt, std::make_shared<const SamplingParams>(p),
                                              0));
    scheduler.add(seqs.back().get());
    return seqs.back().get();
  }

  StepPlan step() {
    StepPlan plan = scheduler.schedule();
    scheduler.finish_step(plan);
    for (const ScheduledSequence& s : plan.seqs) {
      if (!s.sample) continue;
      s.seq->append_token(1);
      if (s.seq->num_output_tokens() >= s.seq->params().max_tokens)
        scheduler.finish(s.seq, FinishReason::length);
    }
    EXPECT_EQ(scheduler.check_invariants(), "");
    return plan;
  }

  Scheduler scheduler;
  std::vector<std::unique_ptr<Sequence>> seqs;
};

SchedulerConfig config(int max_num_seqs, int budget, int max_model_len, bool chunked) {
  return {max_num_seqs, budget, max_model_len, chunked};
}

using testing::error_message;

TEST(Scheduler, ConfigBudgetFitsAPlannedSequence) {
  // One sequence's new tokens are 29 bits of its ScheduledSequence.
  EXPECT_NO_THROW(config(4, kMaxStepTokens, 128, true).validate());
  const std::string msg = error_message([] { config(4, kMaxStepTokens + 1, 128, true).validate(); });
  EXPECT_NE(msg.find("max_num_batched_tokens must be in [1, 536870911]"), std::string::npos) << msg;
}

TEST(Scheduler, ConfigWithoutChunkingNeedsBudgetForAWholeSequence) {
  const std::string msg = error_message([] { config(4, 64, 128, false).validate(); });
  EXPECT_NE(msg.find("max_num_batched_tokens"), std::string::npos) << msg;
  EXPECT_NO_THROW(config(4, 64, 128, true).validate());
  EXPECT_NE(error_message([] { config(0, 64, 64, false).validate(); }).find("max_num_seqs"),
            std::string::npos);
}

TEST(Scheduler, RejectsPromptLongerThanMaxModelLen) {
  Harness h(config(4, 64, 32, true), 64);
  const std::string msg = error_message([&] { h.add(33); });
  EXPECT_NE(msg.find("max_model_len=32"), std::string::npos) << msg;
  EXPECT_EQ(h.scheduler.num_waiting(), 0u);
  EXPECT_NO_THROW(h.add(32));
}

TEST(Scheduler, RejectsRequestThatCanNeverFitTheCache) {
  Harness h(config(4, 256, 256, false), 8);  // 32 tokens of KV
  // 20 + 13 tokens at most; the last sampled one needs no KV: 32 tokens, 8 blocks.
  EXPECT_EQ(error_message([&] { h.add(20, 13); }), "");
  const std::string too_big = error_message([&] { h.add(20, 14); });  // 33 tokens of KV
  EXPECT_NE(too_big.find("KV cache blocks"), std::string::npos) << too_big;
  EXPECT_NE(error_message([&] { h.add(0); }).find("empty"), std::string::npos);
}

TEST(Scheduler, RunsDecodesFirstThenPrefillsInOneStep) {
  Harness h(config(8, 64, 64, false), 64);
  Sequence* a = h.add(5);
  Sequence* b = h.add(6);
  StepPlan first = h.step();
  ASSERT_EQ(first.seqs.size(), 2u);
  EXPECT_EQ(first.num_batched_tokens, 11);
  Sequence* c = h.add(7);
  StepPlan second = h.step();
  ASSERT_EQ(second.seqs.size(), 3u);
  EXPECT_EQ(second.seqs[0].seq, a);
  EXPECT_EQ(second.seqs[1].seq, b);
  EXPECT_EQ(second.seqs[2].seq, c);
  EXPECT_EQ(second.seqs[0].num_new_tokens, 1);
  EXPECT_EQ(second.seqs[0].start, 5);
  EXPECT_EQ(second.seqs[2].num_new_tokens, 7);
  EXPECT_EQ(second.num_batched_tokens, 9);
  for (const auto& s : second.seqs) EXPECT_TRUE(s.sample);
}

TEST(Scheduler, KeepsWithinMaxNumSeqs) {
  Harness h(config(2, 64, 64, false), 64);
  for (int i = 0; i < 4; ++i) h.add(3);
  EXPECT_EQ(h.step().seqs.size(), 2u);
  EXPECT_EQ(h.scheduler.num_running(), 2u);
  EXPECT_EQ(h.scheduler.num_waiting(), 2u);
  EXPECT_EQ(h.step().seqs.size(), 2u);
}

TEST(Scheduler, KeepsWithinTokenBudgetWithoutSplittingPrompts) {
  Harness h(config(8, 25, 25, false), 64);
  for (int i = 0; i < 3; ++i) h.add(10);
  StepPlan plan = h.step();
  EXPECT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.num_batched_tokens, 20);
  plan = h.step();  // 2 decodes + the third prompt
  EXPECT_EQ(plan.seqs.size(), 3u);
  EXPECT_EQ(plan.num_batched_tokens, 12);
}

TEST(Scheduler, ChunksLongPromptsAndSamplesOnlyAtTheEnd) {
  Harness h(config(8, 8, 64, true), 64);
  Sequence* a = h.add(3);
  h.step();
  Sequence* b = h.add(20);
  std::vector<int> chunks;
  while (b->num_computed_tokens < 20) {
    StepPlan plan = h.step();
    ASSERT_EQ(plan.seqs.size(), 2u);
    EXPECT_EQ(plan.seqs[0].seq, a);  // the decode goes first
    EXPECT_EQ(plan.seqs[1].seq, b);
    EXPECT_EQ(plan.num_batched_tokens, 1 + plan.seqs[1].num_new_tokens);
    chunks.push_back(plan.seqs[1].num_new_tokens);
    EXPECT_EQ(plan.seqs[1].sample, b->num_computed_tokens == 20);
  }
  EXPECT_EQ(chunks, (std::vector<int>{7, 7, 6}));
  EXPECT_EQ(b->num_output_tokens(), 1);
}

TEST(Scheduler, PreemptsTheNewestWhenBlocksRunOutAndRecomputesIt) {
  // 6 blocks = 24 tokens; two sequences of 8 grow until they cannot both fit.
  Harness h(config(4, 64, 64, false), 6);
  Sequence* old_seq = h.add(8, 12);
  Sequence* new_seq = h.add(8, 12, 200);
  h.step();
  int preempted_steps = 0;
  while (new_seq->num_preemptions == 0) {
    StepPlan plan = h.step();
    preempted_steps += !plan.preempted.empty();
  }
  EXPECT_EQ(preempted_steps, 1);
  EXPECT_EQ(new_seq->status, SequenceStatus::waiting);
  EXPECT_TRUE(new_seq->block_ids.empty());
  EXPECT_EQ(new_seq->num_computed_tokens, 0);
  EXPECT_EQ(old_seq->num_preemptions, 0);
  const int kept = new_seq->num_output_tokens();
  EXPECT_GT(kept, 0);
  while (h.scheduler.has_unfinished()) {
    StepPlan plan = h.step();
    for (const auto& s : plan.seqs)
      if (s.seq == new_seq && s.start == 0) {
        EXPECT_EQ(s.num_new_tokens, 8 + kept);  // recomputes its prompt and kept output
      }
  }
  EXPECT_EQ(old_seq->num_output_tokens(), 12);
  EXPECT_EQ(new_seq->num_output_tokens(), 12);
  EXPECT_EQ(h.scheduler.block_manager().num_free_blocks(), 6);
}

TEST(Scheduler, AbortFreesBlocksOfRunningAndWaitingSequences) {
  Harness h(config(1, 64, 64, false), 16);
  Sequence* a = h.add(9);
  Sequence* b = h.add(9);
  h.step();
  EXPECT_EQ(h.scheduler.block_manager().num_free_blocks(), 13);
  h.scheduler.finish(a, FinishReason::abort);
  EXPECT_EQ(a->finish_reason, FinishReason::abort);
  EXPECT_EQ(h.scheduler.block_manager().num_free_blocks(), 16);
  h.scheduler.finish(b, FinishReason::abort);
  EXPECT_FALSE(h.scheduler.has_unfinished());
  EXPECT_EQ(h.scheduler.check_invariants(), "");
}

TEST(Scheduler, PrefixCacheHitComputesOnlyTheNewTokens) {
  Harness h(config(4, 64, 64, false), 32, true);
  h.add(18, 1);
  h.step();  // finishes: its 4 full blocks stay cached
  Sequence* b = h.add(22, 1);  // same first 18 tokens
  StepPlan plan = h.step();
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].start, 16);
  EXPECT_EQ(plan.seqs[0].num_new_tokens, 6);
  EXPECT_EQ(b->num_cached_tokens, 16);
  EXPECT_EQ(h.scheduler.block_manager().prefix_cache_hits(), 16u);
}

TEST(Scheduler, InvariantsHoldUnderChurnAndEveryRequestFinishes) {
  Harness h(config(6, 16, 64, true), 12, true);
  std::mt19937 rng(3);
  int aborted = 0;
  for (int step = 0; step < 400 && (step < 40 || h.scheduler.has_unfinished()); ++step) {
    if (step < 40 && rng() % 2 == 0)
      h.add(1 + static_cast<int>(rng() % 20), 1 + static_cast<int>(rng() % 12),
            100 * static_cast<int>(rng() % 3));  // shared prefixes
    if (rng() % 25 == 0 && !h.scheduler.running().empty()) {
      h.scheduler.finish(h.scheduler.running().front(), FinishReason::abort);
      ++aborted;
    }
    const StepPlan plan = h.step();
    EXPECT_LE(plan.num_batched_tokens, 16);
    EXPECT_LE(plan.seqs.size(), 6u);
  }
  EXPECT_FALSE(h.scheduler.has_unfinished());
  EXPECT_EQ(h.scheduler.block_manager().num_free_blocks(), 12);
  for (const auto& seq : h.seqs) {
    ASSERT_TRUE(seq->finished());
    if (seq->finish_reason == FinishReason::length) {
      EXPECT_EQ(seq->num_output_tokens(), seq->params().max_tokens);
    }
  }
  EXPECT_GT(aborted, 0);
}

// What a plan says, with sequences by id (the two runs below own different sequences).
std::string describe(const StepPlan& plan) {
  std::string text = "step " + std::to_string(plan.step) + ", " +
                     std::to_string(plan.num_batched_tokens) + " tokens:";
  for (const ScheduledSequence& s : plan.seqs)
    text += " " + std::to_string(s.seq->id()) + "@" + std::to_string(s.start) + "+" +
            std::to_string(s.num_new_tokens) + (s.sample ? "s" : "");
  text += "; preempted:";
  for (const Sequence* seq : plan.preempted) text += " " + std::to_string(seq->id());
  return text;
}

TEST(Scheduler, RefillingOnePlanSchedulesAsFreshPlansDo) {
  // A small cache with chunked prefill: preemptions, prefill chunks and decodes in one run.
  Harness fresh(config(4, 16, 64, true), 12);
  Harness reused(config(4, 16, 64, true), 12);
  for (Harness* h : {&fresh, &reused})
    for (int i = 0; i < 6; ++i) h->add(5 + 3 * i, 8);
  StepPlan plan;
  int preempted = 0;
  for (int step = 0; step < 200 && fresh.scheduler.has_unfinished(); ++step) {
    const StepPlan expected = fresh.step();
    reused.scheduler.schedule(plan);
    ASSERT_EQ(describe(plan), describe(expected));
    preempted += static_cast<int>(plan.preempted.size());
    reused.scheduler.finish_step(plan);
    for (const ScheduledSequence& s : plan.seqs) {
      if (!s.sample) continue;
      s.seq->append_token(1);
      if (s.seq->num_output_tokens() >= s.seq->params().max_tokens)
        reused.scheduler.finish(s.seq, FinishReason::length);
    }
  }
  EXPECT_FALSE(fresh.scheduler.has_unfinished());
  EXPECT_GT(preempted, 0);
}

}  // namespace
}  // namespace minivllm
