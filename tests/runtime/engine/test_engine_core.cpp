// The engine core driven directly with a step executor on the fake model (fake_model_runner.hpp):
// the look-ahead plans a step while one runs (and none after a sequence's last token), a failed
// step ends only the requests it ran, and
// an abort during a step takes effect when the step returns.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_core.hpp"
#include "engine/step_executor.hpp"
#include "fake_model_runner.hpp"

namespace minivllm {
namespace {

using testing::FakeModelRunner;
using testing::reference_greedy;

constexpr int kVocab = 64;
constexpr int kBlockSize = 16;
constexpr int kBlocks = 256;
constexpr int kNewTokens = 12;

struct Answers final : StepAnswers {
  std::deque<StepResult> results;
  std::deque<StepFailed> failures;
  void result(StepResult&& r) override { results.push_back(std::move(r)); }
  void failed(StepFailed&& f) override { failures.push_back(std::move(f)); }
};

// The core, an executor on the fake model, and what the core said about each sequence.
struct Harness {
  Harness()
      : runner(kVocab, kBlocks, kBlockSize),
        core(EngineConfig{{64, 2048, 1024, false}, {kBlockSize, kBlocks, true}, {0}, 1}, {}),
        executor(runner, {0}) {}

  SeqRequest request(const std::string& id, int prompt_len, std::uint32_t seed) {
    SeqRequest r;
    r.request_id = id;
    r.first_seq_id = next_seq_id++;
    std::mt19937 rng(seed);
    for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(static_cast<std::int32_t>(rng() % kVocab));
    r.params.temperature = 0.0;
    r.params.max_tokens = kNewTokens;
    r.params.ignore_eos = true;
    prompts[r.first_seq_id] = r.prompt;
    return r;
  }

  // A request of `prompt_len` tokens, queued, and the steps that lets the core send.
  SeqRequest add_and_send(const std::string& id, int prompt_len, std::uint32_t seed) {
    SeqRequest r = request(id, prompt_len, seed);
    core.add(r);
    sent_by_add = send();
    return r;
  }

  // Every step the core has now goes to the executor; returns how many.
  int send() {
    int sent = 0;
    while (std::optional<StepWork> work = core.next_step(out)) {
      look_ahead_steps += work->look_ahead ? 1 : 0;
      ++steps_sent;
      executor.run(*work, answers);
      ++sent;
    }
    return sent;
  }

  // The oldest step's answer back to the core, then what that lets it send.
  void complete_oldest() {
    if (answers.results.empty()) executor.drain(answers);
    ASSERT_FALSE(answers.results.empty());
    core.complete(answers.results.front(), out);
    answers.results.pop_front();
    core.end_turn();
    take_outputs();
    send();
  }

  void take_outputs() {
    for (const SeqToken& t : out.tokens) tokens[t.seq_id].push_back(t.token);
    for (const SeqUpdate& u : out.updates) {
      if (u.token >= 0) tokens[u.seq_id].push_back(u.token);
      if (u.finish_reason != FinishReason::none) finished[u.seq_id] = u.finish_reason;
      if (!u.error.empty()) errors[u.seq_id] = u.error;
    }
    out = {};
  }

  FakeModelRunner runner;
  EngineCore core;
  StepExecutor executor;
  Answers answers;
  StepOutputs out;
  std::uint64_t next_seq_id = 0;
  int look_ahead_steps = 0;
  int steps_sent = 0;
  int sent_by_add = 0;
  std::map<std::uint64_t, std::vector<std::int32_t>> prompts, tokens;
  std::map<std::uint64_t, FinishReason> finished;
  std::map<std::uint64_t, std::string> errors;
};

TEST(EngineCore, PlansAheadWhileAStepRunsAndTheTokensStayTheReferences) {
  Harness h;
  for (int i = 0; i < 4; ++i) {
    SeqRequest r = h.request("r" + std::to_string(i), 5 + 9 * i, i);
    h.core.add(r);
  }
  EXPECT_EQ(h.send(), 1);  // the prefill; nothing to plan ahead of it
  while (h.core.has_unfinished()) h.complete_oldest();
  EXPECT_GT(h.look_ahead_steps, 0);
  for (const auto& [seq, prompt] : h.prompts) {
    EXPECT_EQ(h.tokens[seq], reference_greedy(prompt, kVocab, kNewTokens)) << "sequence " << seq;
    EXPECT_EQ(h.finished[seq], FinishReason::length);
  }
  EXPECT_EQ(h.core.scheduler().check_invariants(), "");
  EXPECT_EQ(h.core.scheduler().block_manager().num_free_blocks(), kBlocks);
}

// A single stream: a step planned ahead of the one that samples the last token would compute a
// row that finishes unused, and the next request would wait behind it.
TEST(EngineCore, PlansNoStepAheadOfTheLastTokens) {
  Harness h;
  const SeqRequest r = h.add_and_send("alone", 7, 3);
  while (h.core.has_unfinished()) h.complete_oldest();
  EXPECT_EQ(h.steps_sent, kNewTokens);  // the prefill's token, then a decode step per token
  EXPECT_GT(h.look_ahead_steps, 0);
  EXPECT_EQ(h.tokens[r.first_seq_id], reference_greedy(r.prompt, kVocab, kNewTokens));
  EXPECT_EQ(h.core.scheduler().block_manager().num_free_blocks(), kBlocks);
}

TEST(EngineCore, AFailedStepEndsOnlyTheRequestsItRan) {
  Harness h;
  SeqRequest a = h.add_and_send("a", 20, 1);
  ASSERT_EQ(h.sent_by_add, 1);
  SeqRequest b = h.add_and_send("b", 30, 2);  // waits: a step runs
  EXPECT_EQ(h.sent_by_add, 0);
  h.core.fail_step("worker: boom", h.out);
  h.answers.results.clear();  // the failed step's answer, dropped as a failure would be
  h.take_outputs();
  EXPECT_EQ(h.errors[a.first_seq_id], "worker: boom");
  EXPECT_EQ(h.finished[a.first_seq_id], FinishReason::abort);
  EXPECT_EQ(h.errors.count(b.first_seq_id), 0u);
  EXPECT_TRUE(h.core.has_unfinished());
  h.send();
  while (h.core.has_unfinished()) h.complete_oldest();
  EXPECT_EQ(h.tokens[b.first_seq_id], reference_greedy(b.prompt, kVocab, kNewTokens));
  EXPECT_EQ(h.core.scheduler().block_manager().num_free_blocks(), kBlocks);
}

TEST(EngineCore, AnAbortDuringAStepTakesEffectWhenItReturns) {
  Harness h;
  SeqRequest a = h.add_and_send("a", 20, 1);
  ASSERT_EQ(h.sent_by_add, 1);
  EXPECT_TRUE(h.core.abort("a", h.out));
  EXPECT_TRUE(h.out.updates.empty());  // its blocks may be in use right now
  EXPECT_FALSE(h.core.abort("nobody", h.out));
  h.complete_oldest();
  EXPECT_EQ(h.finished[a.first_seq_id], FinishReason::abort);
  EXPECT_FALSE(h.core.has_unfinished());
  EXPECT_EQ(h.core.scheduler().block_manager().num_free_blocks(), kBlocks);
}

}  // namespace
}  // namespace minivllm
