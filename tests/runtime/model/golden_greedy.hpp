#pragma once
// Shared by the golden parity tests of every backend: greedy decoding of the goldens' prompts
// through the paged cache (one prefill, chunked prefill, prefix-cache reuse), token by token.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/model.hpp>

#include "golden_forward.hpp"
#include "greedy_goldens.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model_test_support.hpp"

namespace minivllm::testing {

// How the prompt reaches the cache before decoding starts.
enum class PromptMode { one_prefill, chunked, prefix_cached };
inline constexpr PromptMode kPromptModes[] = {PromptMode::one_prefill, PromptMode::chunked,
                                              PromptMode::prefix_cached};

inline constexpr std::int64_t kGreedySteps = 32;

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
               std::int64_t max_tokens, DType kv_dtype)
      : model_(model), ops_(ops), vocab_(vocab), block_size_(block_size),
        num_blocks_(2 * blocks_for(max_tokens, block_size)),
        kv_(allocate_kv_cache(ops, model.kv_cache_spec(), num_blocks_, block_size, kv_dtype)),
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
inline void expect_tokens(const std::vector<std::int32_t>& expected,
                   const std::vector<std::int32_t>& generated, const std::string& where) {
  ASSERT_EQ(generated.size(), static_cast<std::size_t>(kGreedySteps)) << where;
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(generated[i], expected[i]) << where << " step " << i;
}

// One golden prompt's greedy continuation of kGreedySteps tokens, the prompt reaching a cache of
// `kv_dtype` as `mode` says. prefix_cached gives two: the sequence that computed the prompt, then
// the one that reused its full blocks (the two decode side by side in one batch).
inline std::vector<std::vector<std::int32_t>> greedy_tokens(Model& model, Ops& ops,
                                                            std::int64_t vocab,
                                                            const std::vector<std::int32_t>& prompt,
                                                            PromptMode mode, std::int64_t block_size,
                                                            DType kv_dtype) {
  const auto n = static_cast<std::int32_t>(prompt.size());
  GreedyDriver driver(model, ops, vocab, block_size, n + kGreedySteps, kv_dtype);
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
      // Never the last prompt token from the cache: its logits are needed.
      Sequence first{prompt, 0, {}, {}};
      driver.step({{&first, n}});
      const std::int32_t shared_blocks = (n - 1) / static_cast<std::int32_t>(block_size);
      seq.blocks.assign(first.blocks.begin(), first.blocks.begin() + shared_blocks);
      seq.num_cached = shared_blocks * static_cast<std::int32_t>(block_size);
      driver.step({{&first, 1}, {&seq, n - seq.num_cached}});
      driver.decode({&first, &seq});
      return {first.generated, seq.generated};
    }
  }
  return {seq.generated};
}

// One golden greedy continuation (greedy_tokens) compared up to the golden's first step with a
// margin below `tolerance`.
inline void run_greedy(Model& model, Ops& ops, std::int64_t vocab, const GreedyGolden& g,
                       PromptMode mode, std::int64_t block_size, DType kv_dtype,
                       double tolerance) {
  const std::vector<std::int32_t> expected = g.reliable_tokens(tolerance);
  const std::string where = "prompt " + std::to_string(g.prompt_index) + " block size " +
                            std::to_string(block_size) + " mode " + std::to_string(int(mode));
  const auto runs = greedy_tokens(model, ops, vocab, g.prompt, mode, block_size, kv_dtype);
  for (std::size_t i = 0; i < runs.size(); ++i)
    expect_tokens(expected, runs[i], where + " sequence " + std::to_string(i));
}

}  // namespace minivllm::testing
