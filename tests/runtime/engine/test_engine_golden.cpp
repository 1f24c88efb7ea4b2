// The step loop on the real tiny models (random-v1 checkpoints, plugins, CPU backend): greedy
// outputs equal the Hugging Face goldens alone, batched with 64 requests, with prefix caching on
// and off, under heavy preemption and with chunked prefill; with an fp8 cache they equal, exactly,
// the model's own greedy run of each prompt alone, in all of those. Run per model with --gtest_filter
// (meson.build), as the model tests do.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cpu_ops.hpp"
#include "engine/backend_model_runner.hpp"
#include "engine/llm_engine.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "greedy_goldens.hpp"
#include "runtime/model/golden_greedy.hpp"
#include "runtime/model/model_test_support.hpp"

namespace minivllm {
namespace {


constexpr int kBlockSize = 16;
constexpr int kNewTokens = 32;
constexpr double kMarginTolerance = 1e-3;

struct ModelCase {
  std::string name;
  std::string tokenizer_family;
};

struct EngineSetup {
  int num_blocks = 1024;
  bool prefix_caching = true;
  bool chunked = false;
  int budget = 4096;
  DType kv_dtype = DType::f32;  // fp8_e4m3: checked against fp8_expected_
};

// Counts the tokens the model computes.
class CountingRunner final : public ModelRunner {
 public:
  explicit CountingRunner(ModelRunner& inner) : inner_(inner) {}
  int vocab_size() const override { return inner_.vocab_size(); }
  std::span<const float> execute(const Batch& batch) override {
    tokens += batch.num_tokens();
    return inner_.execute(batch);
  }
  std::int64_t tokens = 0;

 private:
  ModelRunner& inner_;
};

// A golden prompt and its tokens up to the first step whose margin is below tolerance.
struct Golden {
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> expected;
};

class EngineGolden : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    const ModelCase& c = GetParam();
    for (const testing::GreedyGolden& g : testing::load_greedy_goldens(c.name))
      goldens_.push_back({g.prompt, g.reliable_tokens(kMarginTolerance)});
    ASSERT_FALSE(goldens_.empty());
    const auto model_dir = testing::make_tiny_checkpoint(dir_.path(), c.name, c.tokenizer_family);
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load({testing::plugin_dir()}));
    loaded_ = load_model(*registry_, model_dir, ops_);
  }

  // Each golden prompt's whole greedy continuation with an fp8 cache, from the model alone
  // (golden_greedy.hpp's driver, one prefill): what the engine must give in every setup.
  void expect_fp8_alone() {
    for (const Golden& g : goldens_)
      fp8_expected_.push_back(
          {g.prompt, testing::greedy_tokens(*loaded_.model, ops_, loaded_.config.vocab_size,
                                            g.prompt, testing::PromptMode::one_prefill,
                                            kBlockSize, DType::fp8_e4m3)[0]});
  }

  // Runs requests[i] = goldens_[picks[i]] together; checks each against its golden and the
  // block pool after every step. Returns the number of preemptions.
  // With `rounds` > 1 the requests run again, one round after the other, in the same engine;
  // `computed` receives the tokens the model computed in each round.
  std::uint64_t run(const EngineSetup& s, const std::vector<std::size_t>& picks, int rounds = 1,
                    std::vector<std::int64_t>* computed = nullptr) {
    BackendModelRunner backend(
        *loaded_.model, ops_,
        allocate_kv_cache(ops_, loaded_.model->kv_cache_spec(), s.num_blocks, kBlockSize,
                          s.kv_dtype),
        static_cast<int>(loaded_.config.vocab_size));
    CountingRunner runner(backend);
    const int max_model_len = 1024;
    LLMEngine engine({{256, s.chunked ? s.budget : std::max(s.budget, max_model_len),
                       max_model_len, s.chunked},
                      {kBlockSize, s.num_blocks, s.prefix_caching},
                      {},
                      0},
                     runner);
    SamplingParams greedy;
    greedy.temperature = 0.0;
    greedy.max_tokens = kNewTokens;
    greedy.ignore_eos = true;
    const std::vector<Golden>& expected =
        s.kv_dtype == DType::fp8_e4m3 ? fp8_expected_ : goldens_;
    for (int round = 0; round < rounds; ++round) {
      const std::int64_t before = runner.tokens;
      for (std::size_t i = 0; i < picks.size(); ++i)
        engine.add_request(std::to_string(i), expected[picks[i]].prompt, greedy);
      std::map<std::string, RequestOutput> done;
      while (engine.has_unfinished_requests()) {
        for (RequestOutput& out : engine.step())
          if (out.finished) done[out.request_id] = std::move(out);
        EXPECT_EQ(engine.scheduler().check_invariants(), "");
      }
      EXPECT_EQ(engine.scheduler().block_manager().num_free_blocks(), s.num_blocks);
      for (std::size_t i = 0; i < picks.size(); ++i) {
        const auto& got = done.at(std::to_string(i)).outputs.at(0).token_ids;
        const auto& want = expected[picks[i]].expected;
        EXPECT_EQ(got.size(), static_cast<std::size_t>(kNewTokens));
        EXPECT_EQ(std::vector<std::int32_t>(got.begin(), got.begin() + want.size()), want)
            << "request " << i << " (golden prompt " << picks[i] << ") round " << round;
      }
      if (computed) computed->push_back(runner.tokens - before);
    }
    return engine.scheduler().num_preemptions();
  }

  // n requests cycling through the golden prompts: mixed lengths, repeated prompts.
  std::vector<std::size_t> mixed(std::size_t n) const {
    std::vector<std::size_t> picks;
    for (std::size_t i = 0; i < n; ++i) picks.push_back((i * 3) % goldens_.size());
    return picks;
  }

  testing::TempDir dir_{"engine_golden"};
  std::vector<Golden> goldens_;
  std::vector<Golden> fp8_expected_;  // expect_fp8_alone
  CpuOps ops_;
  std::unique_ptr<PluginRegistry> registry_;
  LoadedModel loaded_;
};

TEST_P(EngineGolden, EachRequestAlone) {
  for (std::size_t i = 0; i < goldens_.size(); ++i) run(EngineSetup{}, {i});
}

TEST_P(EngineGolden, SixtyFourTogetherWithPrefixCachingOnAndOff) {
  run(EngineSetup{.prefix_caching = true}, mixed(64));
  run(EngineSetup{.prefix_caching = false}, mixed(64));
}

TEST_P(EngineGolden, RepeatedLongPromptComputesOnlyItsUncachedTokens) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < goldens_.size(); ++i)
    if (goldens_[i].prompt.size() > goldens_[longest].prompt.size()) longest = i;
  const auto n = static_cast<std::int64_t>(goldens_[longest].prompt.size());
  std::vector<std::int64_t> computed;
  run(EngineSetup{}, {longest}, 2, &computed);
  ASSERT_EQ(computed.size(), 2u);
  EXPECT_EQ(computed[0], n + kNewTokens - 1);
  // The first round left n + 31 computed tokens; its full blocks within the prompt's first n - 1
  // tokens (the last is always recomputed) are hits.
  const std::int64_t hit = (n - 1) / kBlockSize * kBlockSize;
  EXPECT_EQ(computed[1], (n - hit) + kNewTokens - 1);
}

TEST_P(EngineGolden, TinyCacheWithManyPreemptions) {
  // The longest golden prompt needs 27 blocks on its own.
  EXPECT_GT(run(EngineSetup{.num_blocks = 40}, mixed(10)), 5u);
}

TEST_P(EngineGolden, ChunkedPrefillAtSeveralChunkSizes) {
  for (int chunk : {7, 64, 200}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    run(EngineSetup{.chunked = true, .budget = chunk}, mixed(10));
  }
}

TEST_P(EngineGolden, Fp8CacheAloneBatchedCachedPreemptedAndChunked) {
  expect_fp8_alone();
  constexpr DType fp8 = DType::fp8_e4m3;
  for (std::size_t i = 0; i < goldens_.size(); ++i) run(EngineSetup{.kv_dtype = fp8}, {i});
  run(EngineSetup{.prefix_caching = true, .kv_dtype = fp8}, mixed(64));
  EXPECT_GT(run(EngineSetup{.num_blocks = 40, .kv_dtype = fp8}, mixed(10)), 5u);
  run(EngineSetup{.chunked = true, .budget = 7, .kv_dtype = fp8}, mixed(10));
}

INSTANTIATE_TEST_SUITE_P(Tiny, EngineGolden,
                         ::testing::Values(ModelCase{"tiny-qwen3", "qwen3"},
                                           ModelCase{"tiny-llama3", "llama3"}),
                         [](const auto& info) {
                           return info.param.tokenizer_family == "qwen3" ? "Qwen3" : "Llama3";
                         });

}  // namespace
}  // namespace minivllm
