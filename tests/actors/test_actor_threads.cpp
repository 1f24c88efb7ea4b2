// The synchronous facade under load: 1,000 short requests submitted at once from 8 threads
// (the fake model of the engine tests, whose greedy output is known) all complete with the right
// tokens, and the block pool is whole afterwards.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actors/runtime_spec.hpp"
#include "runtime/engine/fake_model_runner.hpp"

namespace minivllm {
namespace {

constexpr int kVocab = 512;
constexpr int kNumBlocks = 2048;
constexpr int kBlockSize = 16;

TEST(ActorThreads, ThousandRequestsFromEightThreads) {
  RuntimeSpec spec;
  spec.engine.scheduler = {256, 4096, 256, false};
  spec.engine.cache = {kBlockSize, kNumBlocks, true};
  spec.make_runner = [](const WorkerPlace&) {
    return LoadedRunner{std::make_unique<testing::FakeModelRunner>(kVocab, kNumBlocks, kBlockSize),
                        kNumBlocks};
  };
  LLM llm(std::move(spec));

  constexpr int kThreads = 8;
  constexpr int kPerThread = 125;
  constexpr int kNewTokens = 6;
  // Prompts share prefixes across threads, so prefix caching is exercised too.
  auto prompt_of = [](int t, int i) {
    std::vector<std::int32_t> p;
    for (int k = 0; k < 3 + (i % 13); ++k) p.push_back((i * 7 + k * 31 + (k > 4 ? t : 0)) % kVocab);
    return p;
  };
  std::vector<std::vector<RequestOutput>> outputs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::vector<std::int32_t>> prompts;
      for (int i = 0; i < kPerThread; ++i) prompts.push_back(prompt_of(t, i));
      SamplingParams greedy;
      greedy.temperature = 0.0;
      greedy.max_tokens = kNewTokens;
      greedy.ignore_eos = true;
      outputs[t] = llm.generate(prompts, greedy);
    });
  for (std::thread& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(outputs[t].size(), static_cast<std::size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      const auto& got = outputs[t][i].outputs.at(0).token_ids;
      EXPECT_EQ(got, testing::reference_greedy(prompt_of(t, i), kVocab, kNewTokens))
          << "thread " << t << " request " << i;
    }
  }
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.invariant_violation, "");
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0u);
}

}  // namespace
}  // namespace minivllm
