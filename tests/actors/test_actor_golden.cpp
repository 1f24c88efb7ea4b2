// The engine core's acceptance scenarios through the actors (via the synchronous facade):
// greedy outputs equal the goldens alone, 64 mixed with prefix caching on and off, under
// forced preemption, with chunked prefill and over tensor-parallel ranks; the block pool is
// whole afterwards.
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

INSTANTIATE_TEST_SUITE_P(Tiny, ActorGolden, ::testing::Values("tiny-qwen3", "tiny-llama3"),
                         [](const auto& info) {
                           return info.param == "tiny-qwen3" ? std::string("Qwen3") : std::string("Llama3");
                         });

}  // namespace
}  // namespace minivllm
