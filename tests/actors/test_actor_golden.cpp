// The engine core's acceptance scenarios through the actors (via the synchronous facade):
// greedy outputs equal the goldens alone, 64 mixed with prefix caching on and off, under
// forced preemption, with chunked prefill and over tensor-parallel ranks; the block pool is
// whole afterwards. With an fp8 KV cache the same scenarios give each request's tokens alone.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"
#include "golden_run.hpp"

namespace minivllm {
namespace {

using testing::Golden;

class ActorGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { goldens_ = testing::load_goldens(GetParam()); }

  // Runs requests[i] = goldens_[picks[i]] at once; returns the stats afterwards.
  EngineStats run(const std::vector<std::string>& overrides, const std::vector<std::size_t>& picks) {
    std::vector<std::string> all = {"model.max_model_len=1024", "scheduler.max_num_seqs=256"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    LLM llm(testing::tiny_config(GetParam(), all));
    return testing::expect_goldens(llm, goldens_, picks, GetParam());
  }

  std::vector<std::vector<std::int32_t>> prompts_of(const std::vector<std::size_t>& picks) const {
    std::vector<std::vector<std::int32_t>> prompts;
    for (std::size_t p : picks) prompts.push_back(goldens_[p].prompt);
    return prompts;
  }

  std::vector<Golden> goldens_;
};

TEST_P(ActorGolden, EachRequestAlone) {
  for (std::size_t i = 0; i < goldens_.size(); ++i) run({}, {i});
}

TEST_P(ActorGolden, SixtyFourTogetherWithPrefixCachingOnAndOff) {
  const auto picks = testing::mixed_picks(64, goldens_.size());
  run({"cache.enable_prefix_caching=true", "cache.num_blocks=1024"}, picks);
  run({"cache.enable_prefix_caching=false", "cache.num_blocks=1024"}, picks);
}

TEST_P(ActorGolden, TinyCacheWithManyPreemptions) {
  // The longest golden prompt needs 27 blocks on its own.
  const EngineStats stats = run({"cache.num_blocks=40", "scheduler.enable_chunked_prefill=false",
                                 "scheduler.max_num_batched_tokens=1024"},
                                testing::mixed_picks(10, goldens_.size()));
  EXPECT_GT(stats.num_preemptions, 5u);
}

TEST_P(ActorGolden, ChunkedPrefillAtSeveralChunkSizes) {
  for (int chunk : {7, 64, 200}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    run({"scheduler.enable_chunked_prefill=true",
         "scheduler.max_num_batched_tokens=" + std::to_string(chunk)},
        testing::mixed_picks(10, goldens_.size()));
  }
}

// Tensor parallelism on the CPU backend (each rank a thread, collectives in process): 2 ranks,
// and 4, which replicate the tiny models' 2 KV heads, give the goldens and exactly the tokens
// of one rank.
TEST_P(ActorGolden, TensorParallelTwoAndFourRanks) {
  const auto picks = testing::mixed_picks(16, goldens_.size());
  std::vector<std::vector<std::int32_t>> one_rank;
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    LLM llm(testing::tiny_config(GetParam(), {"model.max_model_len=1024", "cache.num_blocks=512",
                                              "parallel.tensor_parallel_size=" +
                                                  std::to_string(ranks)}));
    std::vector<std::vector<std::int32_t>> tokens;
    testing::expect_goldens(llm, goldens_, picks, GetParam(), &tokens);
    if (ranks == 1) one_rank = tokens;
    else EXPECT_EQ(tokens, one_rank);
  }
}

// Data parallelism: two replicas, each a scheduler, a KV cache and a worker, give the goldens
// and the tokens of one replica, greedy and seeded; and a prompt sharing a prefix with one
// served before goes to the replica whose prefix cache holds it, though the other is idle.
TEST_P(ActorGolden, DataParallelTwoReplicas) {
  const auto picks = testing::mixed_picks(16, goldens_.size());
  const auto prompts = prompts_of(picks);
  SamplingParams seeded;
  seeded.temperature = 0.8;
  seeded.seed = 1234;
  seeded.max_tokens = 12;
  std::vector<std::vector<std::int32_t>> greedy_one, seeded_one;
  for (int replicas : {1, 2}) {
    SCOPED_TRACE(std::to_string(replicas) + " replicas");
    LLM llm(testing::tiny_config(GetParam(), {"model.max_model_len=1024", "cache.num_blocks=256",
                                              "parallel.data_parallel_size=" +
                                                  std::to_string(replicas)}));
    std::vector<std::vector<std::int32_t>> greedy;
    const EngineStats stats = testing::expect_goldens(llm, goldens_, picks, GetParam(), &greedy);
    EXPECT_EQ(stats.num_blocks, 256u * static_cast<unsigned>(replicas));
    std::vector<std::vector<std::int32_t>> sampled;
    for (const RequestOutput& out : llm.generate(prompts, seeded))
      sampled.push_back(out.outputs.at(0).token_ids);
    if (replicas == 1) {
      greedy_one = greedy;
      seeded_one = sampled;
    } else {
      EXPECT_EQ(greedy, greedy_one);
      EXPECT_EQ(sampled, seeded_one);
    }
  }

  // Prefix-aware routing, read off the prefix-cache counters.
  LLM llm(testing::tiny_config(GetParam(), {"model.max_model_len=1024", "cache.num_blocks=256",
                                            "parallel.data_parallel_size=2"}));
  std::vector<std::int32_t> prefix(64), other(64);
  for (std::int32_t i = 0; i < 64; ++i) {
    prefix[static_cast<std::size_t>(i)] = 1000 + i;
    other[static_cast<std::size_t>(i)] = 5000 + i;
  }
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 4;
  auto with = [&](std::vector<std::int32_t> p, std::int32_t tail) {
    p.push_back(tail);
    return p;
  };
  llm.generate(std::vector<std::vector<std::int32_t>>{with(prefix, 1)}, greedy);  // replica 0
  const std::uint64_t hits_before = llm.stats().counters.prefix_cache_hits;
  // `other` takes replica 0's turn first (both idle), so replica 1 is the idler one when the
  // prompt with the prefix comes: only prefix routing sends it to replica 0, which holds it.
  llm.generate(std::vector<std::vector<std::int32_t>>{with(other, 2), with(prefix, 3)}, greedy);
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.counters.prefix_cache_hits - hits_before, 64u);  // the prefix's 4 blocks of 16
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
}

// The fp8 KV cache through the runtime, set as the CLI and the server set it: each request's
// greedy tokens are the same alone, 16 at once with prefix caching, in a small cache that
// preempts, and over two tensor-parallel ranks (each quantizes its own KV heads); no block is
// left taken.
TEST_P(ActorGolden, Fp8KvCacheAloneBatchedPreemptedAndTensorParallel) {
  const auto picks = testing::mixed_picks(16, goldens_.size());
  const auto prompts = prompts_of(picks);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 32;
  greedy.ignore_eos = true;
  const auto tokens = [&](const std::vector<std::string>& sets, bool alone) {
    std::vector<std::string> all = {"model.max_model_len=1024", "cache.kv_cache_dtype=fp8_e4m3"};
    all.insert(all.end(), sets.begin(), sets.end());
    LLM llm(testing::tiny_config(GetParam(), all));
    std::vector<std::vector<std::int32_t>> out;
    const auto keep = [&](const std::vector<RequestOutput>& done) {
      for (const RequestOutput& o : done) out.push_back(o.outputs.at(0).token_ids);
    };
    if (alone) {
      for (const auto& p : prompts) keep(llm.generate(std::vector<std::vector<std::int32_t>>{p}, greedy));
    } else {
      keep(llm.generate(prompts, greedy));
    }
    const EngineStats stats = llm.stats();
    EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
    return std::pair{out, stats.num_preemptions};
  };
  const auto alone = tokens({"cache.num_blocks=256"}, true).first;
  ASSERT_EQ(alone.size(), prompts.size());
  EXPECT_EQ(tokens({"cache.num_blocks=256"}, false).first, alone);
  const auto [preempted, preemptions] =
      tokens({"cache.num_blocks=40", "scheduler.enable_chunked_prefill=false",
              "scheduler.max_num_batched_tokens=1024"},
             false);
  EXPECT_EQ(preempted, alone);
  EXPECT_GT(preemptions, 0u);
  EXPECT_EQ(tokens({"cache.num_blocks=256", "parallel.tensor_parallel_size=2"}, false).first, alone);
}

INSTANTIATE_TEST_SUITE_P(Tiny, ActorGolden, ::testing::Values("tiny-qwen3", "tiny-llama3"),
                         [](const auto& info) {
                           return info.param == "tiny-qwen3" ? std::string("Qwen3") : std::string("Llama3");
                         });

}  // namespace
}  // namespace minivllm
