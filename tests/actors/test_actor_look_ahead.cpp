// The actors' scheduler plans a decode step while the one before it still runs at the worker,
// and the worker queues it on a runner that can queue steps, fed by the one ahead of it. Seeded
// sampling through them must give exactly the engine core's outputs (one step at a time):
// requests that finish at different steps while others decode, penalties and min_tokens that
// read the sampled tokens, EOS and stop ids, n > 1, logprobs, and a cache small enough to
// preempt. The fake model of the engine tests.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "engine/llm_engine.hpp"
#include "actors/queueing_fake_runner.hpp"
#include "actors/runtime_spec.hpp"
#include "runtime/engine/fake_model_runner.hpp"

namespace minivllm {
namespace {

constexpr int kVocab = 48;  // small: EOS and stop ids come up now and then
constexpr int kBlockSize = 4;
constexpr int kNumRequests = 40;

std::vector<GenerateRequest> mixed_requests() {
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < kNumRequests; ++i) {
    GenerateRequest& r = requests.emplace_back();
    r.request_id = "r" + std::to_string(i);
    for (int k = 0; k < 3 + i % 9; ++k) r.prompt_token_ids.push_back((i * 11 + k * 5) % kVocab);
    SamplingParams& p = r.params;
    p.seed = 1000 + i;
    p.max_tokens = 4 + (i * 7) % 23;
    switch (i % 5) {
      case 0: p.temperature = 0.0; break;
      case 1: p.temperature = 0.8; p.top_k = 8; p.logprobs = 2; break;
      case 2: p.temperature = 1.0; p.top_p = 0.9; p.repetition_penalty = 1.3; break;
      case 3:
        p.temperature = 0.7;
        p.presence_penalty = 0.5;
        p.frequency_penalty = 0.3;
        p.min_tokens = 3;
        p.stop_token_ids = {5, 9};
        break;
      default: p.n = 2; p.temperature = 1.2; p.min_p = 0.05; break;
    }
  }
  return requests;
}

EngineConfig engine_config(int num_blocks) {
  EngineConfig config;
  config.scheduler = {256, 4096, 128, false};
  config.cache = {kBlockSize, num_blocks, true};
  config.eos_token_ids = {1};
  return config;
}

// The oracle: the engine core, one step at a time, with a cache that never preempts.
std::vector<RequestOutput> engine_core_outputs(const std::vector<GenerateRequest>& requests) {
  const EngineConfig config = engine_config(4096);
  testing::FakeModelRunner runner(kVocab, config.cache.num_blocks, kBlockSize);
  LLMEngine engine(config, runner);
  for (const GenerateRequest& r : requests) engine.add_request(r.request_id, r.prompt_token_ids, r.params);
  std::vector<RequestOutput> outputs(requests.size());
  for (RequestOutput& out : engine.run_until_done())
    outputs.at(std::stoul(out.request_id.substr(1))) = std::move(out);
  return outputs;
}

// queueing: the worker's runner queues steps (QueueingFakeRunner; its fed steps are counted in
// fed_steps).
EngineStats expect_actors_equal_engine_core(int num_blocks, bool queueing = false,
                                            std::shared_ptr<std::atomic<int>> fed_steps = {}) {
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> expected = engine_core_outputs(requests);
  RuntimeSpec spec;
  spec.engine = engine_config(num_blocks);
  spec.make_runner = [num_blocks, queueing, fed_steps](const WorkerPlace&) {
    if (queueing)
      return LoadedRunner{std::make_unique<testing::QueueingFakeRunner>(kVocab, num_blocks,
                                                                        kBlockSize, fed_steps),
                          num_blocks};
    return LoadedRunner{std::make_unique<testing::FakeModelRunner>(kVocab, num_blocks, kBlockSize),
                        num_blocks};
  };
  LLM llm(std::move(spec));
  const std::vector<GenerateResult> results = llm.generate(requests);
  EXPECT_EQ(results.size(), expected.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_TRUE(results[i].ok()) << results[i].error;
    const auto& got = results[i].output.outputs;
    const auto& want = expected[i].outputs;
    EXPECT_EQ(got.size(), want.size());
    for (std::size_t c = 0; c < std::min(got.size(), want.size()); ++c) {
      EXPECT_EQ(got[c].token_ids, want[c].token_ids);
      EXPECT_EQ(got[c].finish_reason, want[c].finish_reason);
      EXPECT_EQ(got[c].stop_token_id, want[c].stop_token_id);
      EXPECT_EQ(got[c].logprobs.size(), want[c].logprobs.size());
      for (std::size_t k = 0; k < std::min(got[c].logprobs.size(), want[c].logprobs.size()); ++k)
        EXPECT_EQ(got[c].logprobs[k].chosen.token, want[c].logprobs[k].chosen.token);
    }
  }
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.invariant_violation, "");
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
  // Every step back from the worker is timed once, prefills and decodes apart. A look-ahead step
  // planned before the last tokens were known may still be at the worker (at most the running
  // one and one ahead).
  const StepTimes& times = stats.step_times;
  EXPECT_LE(times.steps(), stats.num_steps);
  EXPECT_GE(times.steps() + 2, stats.num_steps);
  EXPECT_EQ(times.scheduler_steps, times.steps());
  double bucket_turns = 0;
  for (const StepTimeBucket& b : times.buckets) {
    bucket_turns += b.scheduler.seconds;
    // The turn's phases are parts of it; every step result's turn plans and sends a next step
    // but the last few.
    EXPECT_LE(b.scheduler.tokens_seconds + b.scheduler.plan_seconds + b.scheduler.batch_seconds,
              b.scheduler.seconds + 1e-9);
    EXPECT_GT(b.scheduler.tokens_seconds, 0.0);
  }
  EXPECT_NEAR(bucket_turns, times.scheduler_seconds, 1e-9);
  EXPECT_GT(times.scheduler_seconds, 0.0);
  EXPECT_GT(times.run_seconds(), 0.0);
  EXPECT_FALSE(times.buckets.empty());
  if (!times.buckets.empty()) {
    EXPECT_FALSE(times.buckets.front().decode);
    EXPECT_TRUE(times.buckets.back().decode);
    EXPECT_GT(times.buckets.back().scheduler.plan_seconds, 0.0);
    EXPECT_GT(times.buckets.back().scheduler.batch_seconds, 0.0);
  }
  return stats;
}

TEST(ActorLookAhead, SeededSamplingEqualsTheEngineCore) { expect_actors_equal_engine_core(4096); }

TEST(ActorLookAhead, SeededSamplingEqualsTheEngineCoreUnderPreemption) {
  // 40 blocks hold 160 tokens: far less than the requests' peak, so running ones are preempted.
  EXPECT_GT(expect_actors_equal_engine_core(40).num_preemptions, 0u);
}

TEST(ActorLookAhead, QueuedStepsFedOnTheDeviceEqualTheEngineCore) {
  auto fed_steps = std::make_shared<std::atomic<int>>(0);
  expect_actors_equal_engine_core(4096, true, fed_steps);
  EXPECT_GT(fed_steps->load(), 0);
}

TEST(ActorLookAhead, QueuedStepsFedOnTheDeviceEqualTheEngineCoreUnderPreemption) {
  auto fed_steps = std::make_shared<std::atomic<int>>(0);
  EXPECT_GT(expect_actors_equal_engine_core(40, true, fed_steps).num_preemptions, 0u);
  EXPECT_GT(fed_steps->load(), 0);
}

}  // namespace
}  // namespace minivllm
