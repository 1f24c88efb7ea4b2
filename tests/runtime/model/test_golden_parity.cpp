// Golden parity: the tiny models, regenerated with the project's random-v1 writer, against
// Hugging Face transformers' fp32 logits (forward) and greedy continuations (greedy), through
// the plugins and the CPU backend. Run with --gtest_filter per model (tests/runtime/model/meson.build).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/cpu_ops.hpp"
#include "model/load_model.hpp"
#include "greedy_goldens.hpp"
#include "golden_forward.hpp"
#include "golden_greedy.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

constexpr double kTolerance = 1e-3;

struct ModelCase {
  std::string name;  // configs/models/<name>.json and tests/data/golden/<name>.json
  std::string tokenizer_family;
};

class GoldenParity : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    const ModelCase& c = GetParam();
    std::ifstream in(testing::test_data_dir() / "golden" / (c.name + ".json"));
    golden_ = json::parse(in);
    const auto model_dir = testing::make_tiny_checkpoint(dir_.path(), c.name, c.tokenizer_family);
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load({testing::plugin_dir()}));
    loaded_ = load_model(*registry_, model_dir, ops_);
  }

  testing::TempDir dir_{"golden"};
  json golden_;
  CpuOps ops_;
  std::unique_ptr<PluginRegistry> registry_;
  LoadedModel loaded_;
};

// Every position of every prompt, teacher-forced, against the golden top-8 and logsumexp.
TEST_P(GoldenParity, ForwardLogitsMatchAtEveryPosition) {
  const std::int64_t vocab = loaded_.config.vocab_size;
  double max_e = 0;
  testing::for_each_forward_position(
      *loaded_.model, ops_, golden_, vocab, DType::f32,
      [&](const testing::PositionGolden& g, const float* row) {
        const double e = testing::top_logit_error(row, g);
        max_e = std::max(max_e, e);
        EXPECT_LE(e, kTolerance) << g.where;

        std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + static_cast<long>(g.top_ids.size()),
                          order.end(),
                          [row](std::int32_t a, std::int32_t b) { return row[a] > row[b]; });
        const auto& top = g.top_logits;
        for (std::size_t r = 0; r < g.top_ids.size(); ++r) {
          const bool clear_above = r == 0 || top[r - 1] - top[r] > kTolerance;
          const bool clear_below = r + 1 == g.top_ids.size() || top[r] - top[r + 1] > kTolerance;
          if (clear_above && clear_below) {
            EXPECT_EQ(order[r], g.top_ids[r]) << g.where << " rank " << r;
          }
        }

        const float max_logit = row[order[0]];
        double sum = 0;
        for (std::int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - max_logit);
        EXPECT_LE(std::abs(max_logit + std::log(sum) - g.logsumexp),
                  kTolerance * std::abs(g.logsumexp))
            << g.where;
      });
  std::cout << "[ max E ] " << GetParam().name << ": " << max_e << "\n";
}

TEST_P(GoldenParity, GreedyTokensMatchThroughThePagedCache) {
  for (const testing::GreedyGolden& g : testing::load_greedy_goldens(GetParam().name))
    for (auto mode : testing::kPromptModes)
      for (std::int64_t block_size : {1, 16, 256})
        testing::run_greedy(*loaded_.model, ops_, loaded_.config.vocab_size, g, mode, block_size,
                             DType::f32, kTolerance);
}

// The fp8 cache (kv_cache.hpp) against the goldens: max E and top-1 agreement over every forward
// position (the f32 cache's are ForwardLogitsMatchAtEveryPosition's: max E ~7e-7), and how many
// greedy tokens agree with the golden's before the first that differs (with the golden's top-2
// margin there). Printed for benchmarks/results. The tiny models' random weights give nearly flat
// logits (top-2 margins often below 0.05), where e4m3's ~3 % rounding flips top-1 far more often
// than in a trained model; the bounds are the measured figures (2026-12-04: max E 0.029 Llama 3,
// 0.037 Qwen3; top-1 89.5 %, 96.6 %) with some headroom, so that a worse format (rounding toward
// zero, a lost or coarser scale) fails.
TEST_P(GoldenParity, Fp8CacheAgainstTheGoldens) {
  constexpr double kFp8MaxE = 0.045, kFp8MinTop1 = 0.87;
  const std::int64_t vocab = loaded_.config.vocab_size;
  double max_e = 0;
  std::int64_t positions = 0, top1 = 0;
  testing::for_each_forward_position(*loaded_.model, ops_, golden_, vocab, DType::fp8_e4m3,
                                     [&](const testing::PositionGolden& g, const float* row) {
                                       max_e = std::max(max_e, testing::top_logit_error(row, g));
                                       ++positions;
                                       top1 += testing::argmax(row, vocab) == g.top_ids[0];
                                     });
  std::size_t agreed = 0, reliable = 0, golden_tokens = 0;
  std::string parted;
  for (const testing::GreedyGolden& g : testing::load_greedy_goldens(GetParam().name)) {
    const auto got = testing::greedy_tokens(*loaded_.model, ops_, vocab, g.prompt,
                                            testing::PromptMode::one_prefill, 16,
                                            DType::fp8_e4m3)[0];
    std::size_t i = 0;
    while (i < g.tokens.size() && got[i] == g.tokens[i]) ++i;
    agreed += i;
    golden_tokens += g.tokens.size();
    reliable += g.reliable_tokens(kTolerance).size();
    if (i < g.tokens.size())
      parted += " " + std::to_string(i) + " (margin " + std::to_string(g.margins[i]) + ")";
  }
  const double agreement = static_cast<double>(top1) / static_cast<double>(positions);
  std::cout << "[ kv cache ] " << GetParam().name << " F8_E4M3: max E " << max_e << ", top-1 "
            << 100 * agreement << " % of " << positions << " positions; greedy: " << agreed
            << " of " << golden_tokens << " golden tokens agree before the first difference ("
            << reliable << " before a margin below " << kTolerance << "); parted at" << parted
            << "\n";
  EXPECT_LE(max_e, kFp8MaxE);
  EXPECT_GE(agreement, kFp8MinTop1);
}

// With an fp8 cache a request's greedy tokens are the same, exactly, whichever way its prompt
// reached the cache (one prefill, chunks of 5, prefix blocks another sequence wrote) and at
// block sizes 1 and 16: each token's scale depends on that token alone.
TEST_P(GoldenParity, Fp8CacheGreedyTokensDoNotDependOnChunksBlocksOrPrefixHits) {
  for (const testing::GreedyGolden& g : testing::load_greedy_goldens(GetParam().name)) {
    const auto reference =
        testing::greedy_tokens(*loaded_.model, ops_, loaded_.config.vocab_size, g.prompt,
                               testing::PromptMode::one_prefill, 16, DType::fp8_e4m3)[0];
    // Block size 256 would hold these prompts in one block: nothing there for a prefix hit.
    for (auto mode : testing::kPromptModes)
      for (std::int64_t block_size : {1, 16})
        for (const auto& got :
             testing::greedy_tokens(*loaded_.model, ops_, loaded_.config.vocab_size, g.prompt,
                                    mode, block_size, DType::fp8_e4m3))
          EXPECT_EQ(got, reference) << "prompt " << g.prompt_index << " mode " << int(mode)
                                    << " block size " << block_size;
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, GoldenParity,
                         ::testing::Values(ModelCase{"tiny-qwen3", "qwen3"},
                                           ModelCase{"tiny-llama3", "llama3"}),
                         [](const auto& info) {
                           return info.param.name == "tiny-qwen3" ? "Qwen3" : "Llama3";
                         });

}  // namespace
}  // namespace minivllm
