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
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "greedy_goldens.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

using nlohmann::json;
using testing::BlockAllocator;

constexpr double kTolerance = 1e-3;
constexpr std::int64_t kGreedySteps = 32;

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

  std::vector<float> to_host(const Tensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    ops_.to_host(t, v.data());
    return v;
  }

  testing::TempDir dir_{"golden"};
  json golden_;
  CpuOps ops_;
  std::unique_ptr<PluginRegistry> registry_;
  LoadedModel loaded_;
};

std::int64_t blocks_for(std::int64_t tokens, std::int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

std::int32_t argmax(const float* row, std::int64_t n) {
  return static_cast<std::int32_t>(std::max_element(row, row + n) - row);
}

// Every position of every prompt, teacher-forced, against the golden top-8 and logsumexp.
TEST_P(GoldenParity, ForwardLogitsMatchAtEveryPosition) {
  const std::int64_t vocab = loaded_.config.vocab_size;
  const std::int64_t block_size = 16, chunk = 128;  // chunks keep the logits buffer small
  double max_e = 0;
  for (const auto& f : golden_["forward"]) {
    const auto ids = f["ids"].get<std::vector<std::int32_t>>();
    const auto n = static_cast<std::int64_t>(ids.size());
    const std::int64_t num_blocks = blocks_for(n, block_size);
    auto kv = allocate_kv_cache(ops_, loaded_.model->kv_cache_spec(), num_blocks, block_size);
    const auto table = BlockAllocator(num_blocks).take(num_blocks);
    for (std::int64_t start = 0; start < n; start += chunk) {
      const std::int64_t len = std::min(chunk, n - start);
      BatchBuilder builder(static_cast<std::int32_t>(block_size));
      builder.add(std::span(ids).subspan(start, len), static_cast<std::int32_t>(start), table,
                  LogitsFor::all);
      const auto logits = to_host(loaded_.model->forward(builder.build(), kv));
      for (std::int64_t i = 0; i < len; ++i) {
        const std::int64_t pos = start + i;
        const float* row = logits.data() + i * vocab;
        const auto top_ids = f["top_ids"][pos].get<std::vector<std::int32_t>>();
        const auto top_logits = f["top_logits"][pos].get<std::vector<double>>();
        const double golden_lse = f["logsumexp"][pos].get<double>();
        const std::string where = "prompt " + f["prompt"].dump() + " position " + std::to_string(pos);

        double largest = 0, worst = 0;
        for (std::size_t r = 0; r < top_ids.size(); ++r) {
          largest = std::max(largest, std::abs(top_logits[r]));
          worst = std::max(worst, std::abs(row[top_ids[r]] - top_logits[r]));
        }
        const double e = worst / largest;
        max_e = std::max(max_e, e);
        EXPECT_LE(e, kTolerance) << where;

        std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + static_cast<long>(top_ids.size()),
                          order.end(), [row](std::int32_t a, std::int32_t b) { return row[a] > row[b]; });
        for (std::size_t r = 0; r < top_ids.size(); ++r) {
          const bool clear_above = r == 0 || top_logits[r - 1] - top_logits[r] > kTolerance;
          const bool clear_below = r + 1 == top_ids.size() || top_logits[r] - top_logits[r + 1] > kTolerance;
          if (clear_above && clear_below) {
            EXPECT_EQ(order[r], top_ids[r]) << where << " rank " << r;
          }
        }

        const float max_logit = row[order[0]];
        double sum = 0;
        for (std::int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - max_logit);
        EXPECT_LE(std::abs(max_logit + std::log(sum) - golden_lse), kTolerance * std::abs(golden_lse))
            << where;
      }
    }
  }
  std::cout << "[ max E ] " << GetParam().name << ": " << max_e << "\n";
}

// How the prompt reaches the cache before decoding starts.
enum class PromptMode { one_prefill, chunked, prefix_cached };

// One sequence's state in a greedy run: its tokens so far, cached count and blocks.
struct Sequence {
  std::vector<std::int32_t> tokens;
  std::int32_t num_cached = 0;
  std::vector<std::int32_t> blocks;
  std::vector<std::int32_t> generated;
};

class GreedyDriver {
 public:
  GreedyDriver(Model& model, Ops& ops, std::int64_t vocab, std::int64_t block_size,
               std::int64_t max_tokens)
      : model_(model), ops_(ops), vocab_(vocab), block_size_(block_size),
        num_blocks_(2 * blocks_for(max_tokens, block_size)),
        kv_(allocate_kv_cache(ops, model.kv_cache_spec(), num_blocks_, block_size)),
        allocator_(num_blocks_) {}

  // Runs one step over `seqs`, each feeding tokens [num_cached, num_cached + count); a sequence
  // whose step reaches the end of its tokens gets a new greedy token.
  void step(const std::vector<std::pair<Sequence*, std::int32_t>>& seqs) {
    BatchBuilder builder(static_cast<std::int32_t>(block_size_));
    std::vector<Sequence*> sampled;
    for (auto [seq, count] : seqs) {
      const std::int64_t needed = blocks_for(seq->num_cached + count, block_size_);
      if (needed > static_cast<std::int64_t>(seq->blocks.size())) {
        auto more = allocator_.take(needed - static_cast<std::int64_t>(seq->blocks.size()));
        seq->blocks.insert(seq->blocks.end(), more.begin(), more.end());
      }
      const bool ends = seq->num_cached + count == static_cast<std::int32_t>(seq->tokens.size());
      builder.add(std::span(seq->tokens).subspan(seq->num_cached, count), seq->num_cached,
                  seq->blocks, ends ? LogitsFor::last : LogitsFor::none);
      seq->num_cached += count;
      if (ends) sampled.push_back(seq);
    }
    const Tensor logits = model_.forward(builder.build(), kv_);
    std::vector<float> host(static_cast<std::size_t>(logits.numel()));
    ops_.to_host(logits, host.data());
    for (std::size_t i = 0; i < sampled.size(); ++i) {
      const std::int32_t next = argmax(host.data() + i * vocab_, vocab_);
      sampled[i]->tokens.push_back(next);
      sampled[i]->generated.push_back(next);
    }
  }

  // Decode steps, batching every sequence of `seqs` that has fewer than kGreedySteps tokens.
  void decode(const std::vector<Sequence*>& seqs) {
    for (;;) {
      std::vector<std::pair<Sequence*, std::int32_t>> batch;
      for (auto* s : seqs)
        if (s->generated.size() < kGreedySteps) batch.emplace_back(s, 1);
      if (batch.empty()) return;
      step(batch);
    }
  }

 private:
  Model& model_;
  Ops& ops_;
  std::int64_t vocab_;
  std::int64_t block_size_;
  std::int64_t num_blocks_;
  KvCacheView kv_;
  BlockAllocator allocator_;
};

// Compared up to the first step whose golden margin is below the tolerance (where fp32
// rounding may pick the other token).
void expect_tokens(const std::vector<std::int32_t>& expected,
                   const std::vector<std::int32_t>& generated, const std::string& where) {
  ASSERT_EQ(generated.size(), static_cast<std::size_t>(kGreedySteps)) << where;
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(generated[i], expected[i]) << where << " step " << i;
}

void run_greedy(Model& model, Ops& ops, std::int64_t vocab, const testing::GreedyGolden& g,
                PromptMode mode, std::int64_t block_size) {
  const std::vector<std::int32_t>& prompt = g.prompt;
  const std::vector<std::int32_t> expected = g.reliable_tokens(kTolerance);
  const auto n = static_cast<std::int32_t>(prompt.size());
  const std::string where = "prompt " + std::to_string(g.prompt_index) + " block size " +
                            std::to_string(block_size) + " mode " + std::to_string(int(mode));
  GreedyDriver driver(model, ops, vocab, block_size, n + kGreedySteps);
  Sequence seq{prompt, 0, {}, {}};
  switch (mode) {
    case PromptMode::one_prefill:
      driver.step({{&seq, n}});
      driver.decode({&seq});
      break;
    case PromptMode::chunked: {
      constexpr std::int32_t kChunk = 5;  // not a divisor of the block sizes
      while (seq.num_cached < n) driver.step({{&seq, std::min(kChunk, n - seq.num_cached)}});
      driver.decode({&seq});
      break;
    }
    case PromptMode::prefix_cached: {
      // `first` computes the prompt; `seq` then reuses its full blocks (never the last prompt
      // token: its logits are needed) and the two decode side by side in one batch.
      Sequence first{prompt, 0, {}, {}};
      driver.step({{&first, n}});
      const std::int32_t shared_blocks = (n - 1) / static_cast<std::int32_t>(block_size);
      seq.blocks.assign(first.blocks.begin(), first.blocks.begin() + shared_blocks);
      seq.num_cached = shared_blocks * static_cast<std::int32_t>(block_size);
      driver.step({{&first, 1}, {&seq, n - seq.num_cached}});
      driver.decode({&first, &seq});
      expect_tokens(expected, first.generated, where + " (first sequence)");
      break;
    }
  }
  expect_tokens(expected, seq.generated, where);
}

TEST_P(GoldenParity, GreedyTokensMatchThroughThePagedCache) {
  for (const testing::GreedyGolden& g : testing::load_greedy_goldens(GetParam().name))
    for (PromptMode mode : {PromptMode::one_prefill, PromptMode::chunked, PromptMode::prefix_cached})
      for (std::int64_t block_size : {1, 16, 256})
        run_greedy(*loaded_.model, ops_, loaded_.config.vocab_size, g, mode, block_size);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, GoldenParity,
                         ::testing::Values(ModelCase{"tiny-qwen3", "qwen3"},
                                           ModelCase{"tiny-llama3", "llama3"}),
                         [](const auto& info) {
                           return info.param.name == "tiny-qwen3" ? "Qwen3" : "Llama3";
                         });

}  // namespace
}  // namespace minivllm
