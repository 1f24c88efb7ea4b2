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

INSTANTIATE_TEST_SUITE_P(TinyModels, GoldenParity,
                         ::testing::Values(ModelCase{"tiny-qwen3", "qwen3"},
                                           ModelCase{"tiny-llama3", "llama3"}),
                         [](const auto& info) {
                           return info.param.name == "tiny-qwen3" ? "Qwen3" : "Llama3";
                         });

}  // namespace
}  // namespace minivllm
