#pragma once
// One greedy golden run through the synchronous facade, shared by the CPU and CUDA actor tests.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"

namespace minivllm::testing {

// Runs goldens[picks[i]] at once, greedy for kGoldenNewTokens tokens with EOS ignored; each output
// must start with its expected tokens, and the block pool must be whole afterwards. `tokens`
// (optional) gets each request's whole output.
inline EngineStats expect_goldens(LLM& llm, const std::vector<Golden>& goldens,
                                  const std::vector<std::size_t>& picks, const std::string& label,
                                  std::vector<std::vector<std::int32_t>>* tokens = nullptr) {
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = kGoldenNewTokens;
  greedy.ignore_eos = true;
  std::vector<std::vector<std::int32_t>> prompts;
  for (std::size_t p : picks) prompts.push_back(goldens[p].prompt);
  const std::vector<RequestOutput> outs = llm.generate(prompts, greedy);
  EXPECT_EQ(outs.size(), picks.size()) << label;
  for (std::size_t i = 0; i < outs.size() && i < picks.size(); ++i) {
    const Golden& g = goldens[picks[i]];
    const CompletionOutput& c = outs[i].outputs.at(0);
    EXPECT_EQ(c.token_ids.size(), static_cast<std::size_t>(kGoldenNewTokens)) << label;
    EXPECT_EQ(head(c.token_ids, g.expected.size()), g.expected)
        << label << " request " << i << " (golden prompt " << picks[i] << ")";
    EXPECT_EQ(c.finish_reason, FinishReason::length) << label;
    if (tokens != nullptr) tokens->push_back(c.token_ids);
  }
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.invariant_violation, "") << label;
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks) << label;
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0u) << label;
  return stats;
}

}  // namespace minivllm::testing
