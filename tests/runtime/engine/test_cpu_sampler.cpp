#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "backend/cpu_sampler.hpp"

namespace minivllm {
namespace {

const std::vector<float> kLogits = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l / temperature);
  for (float l : logits) p.push_back(std::exp(l / temperature) / sum);
  return p;
}

std::vector<double> keep_and_renormalise(std::vector<double> p, const std::vector<bool>& keep) {
  double sum = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += keep[i] ? p[i] : 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = keep[i] ? p[i] / sum : 0.0;
  return p;
}

std::vector<int> draw_counts(const SamplingParams& params, int draws, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> counts(kLogits.size(), 0);
  SamplerRow row{kLogits, &params, {}, {}, {}, &rng};
  for (int i = 0; i < draws; ++i) ++counts[sample_row(row).token];
  return counts;
}

// Pearson's chi-square over the tokens `expected` allows; those it excludes must never be drawn.
// Returns the statistic and its 0.999 quantile for the degrees of freedom.
std::pair<double, double> chi_square(const std::vector<int>& counts,
                                     const std::vector<double>& expected, int draws) {
  static const double quantile_999[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
  double stat = 0.0;
  int categories = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the allowed set";
      continue;
    }
    const double e = expected[i] * draws;
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++categories;
  }
  return {stat, quantile_999[categories - 1]};
}

constexpr int kDraws = 20000;

TEST(CpuSampler, TemperatureFrequenciesMatchSoftmax) {
  SamplingParams p;
  p.temperature = 0.7;
  const auto counts = draw_counts(p, kDraws, 1234);
  const auto [stat, limit] = chi_square(counts, softmax(kLogits, 0.7), kDraws);
  EXPECT_LT(stat, limit);
  // The test has power: the same draws are far from the temperature-1 distribution.
  EXPECT_GT(chi_square(counts, softmax(kLogits, 1.0), kDraws).first, 10 * limit);
}

TEST(CpuSampler, TopPFrequenciesMatchNucleus) {
  SamplingParams p;
  p.top_p = 0.8;
  const auto probs = softmax(kLogits, 1.0);
  // Most likely first until the kept mass reaches 0.8, the crossing token included.
  std::vector<bool> keep(kLogits.size(), false);
  double mass = 0.0;
  for (std::size_t i = 0; i < probs.size() && mass < 0.8; ++i) {
    keep[i] = true;
    mass += probs[i];
  }
  const auto expected = keep_and_renormalise(probs, keep);
  ASSERT_EQ(std::count(keep.begin(), keep.end(), true), 4);
  const auto [stat, limit] = chi_square(draw_counts(p, kDraws, 99), expected, kDraws);
  EXPECT_LT(stat, limit);
}

TEST(CpuSampler, MinPFrequenciesMatchThreshold) {
  SamplingParams p;
  p.min_p = 0.2;  // keeps tokens with at least 0.2 of the top probability: logits >= 2 + ln 0.2
  const auto probs = softmax(kLogits, 1.0);
  std::vector<bool> keep;
  for (double q : probs) keep.push_back(q >= 0.2 * probs[0]);
  ASSERT_EQ(std::count(keep.begin(), keep.end(), true), 4);
  const auto [stat, limit] =
      chi_square(draw_counts(p, kDraws, 7), keep_and_renormalise(probs, keep), kDraws);
  EXPECT_LT(stat, limit);
}

TEST(CpuSampler, TopKWithTemperatureFrequencies) {
  SamplingParams p;
  p.top_k = 3;
  p.temperature = 1.5;
  std::vector<bool> keep(kLogits.size(), false);
  keep[0] = keep[1] = keep[2] = true;
  const auto [stat, limit] = chi_square(draw_counts(p, kDraws, 5),
                                        keep_and_renormalise(softmax(kLogits, 1.5), keep), kDraws);
  EXPECT_LT(stat, limit);
}

TEST(CpuSampler, TopK1EqualsGreedy) {
  std::mt19937_64 gen(42);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  SamplingParams top1;
  top1.top_k = 1;
  SamplingParams greedy;
  greedy.temperature = 0.0;
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(1000);
    for (float& l : logits) l = normal(gen);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sample_row({logits, &top1, {}, {}, {}, &rng}).token, best);
    EXPECT_EQ(sample_row({logits, &greedy, {}, {}, {}, &rng}).token, best);
  }
}

// A plain greedy row skips the copy of its logits; rows that take the general path with
// settings that change nothing (no ids to penalise or mask) must pick the same token, ties and
// -inf included.
TEST(CpuSampler, GreedyFastPathEqualsGeneralPath) {
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<int> small(-3, 3);  // few values: many ties
  SamplingParams plain;
  plain.temperature = 0.0;
  SamplingParams penalised = plain;
  penalised.repetition_penalty = 1.3;
  SamplingParams min_tokens = plain;
  min_tokens.min_tokens = 5;
  min_tokens.ignore_eos = true;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(64);
    for (float& l : logits) {
      const int v = small(gen);
      l = v == -3 ? -std::numeric_limits<float>::infinity() : static_cast<float>(v);
    }
    const std::int32_t fast = sample_row({logits, &plain, {}, {}, {}, nullptr}).token;
    EXPECT_EQ(fast, std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(sample_row({logits, &penalised, {}, {}, {}, nullptr}).token, fast);
    EXPECT_EQ(sample_row({logits, &min_tokens, {}, {}, {}, nullptr}).token, fast);
  }
}

TEST(CpuSampler, SeededRowsAreReproducibleAndIndependentOfTheBatch) {
  SamplingParams p;
  auto run = [&](int batch_size) {
    std::vector<std::mt19937_64> rngs;
    for (int i = 0; i < batch_size; ++i) rngs.emplace_back(i == 0 ? 2024 : 77 + i);
    std::vector<int> tokens;
    for (int step = 0; step < 100; ++step) {
      std::vector<SamplerRow> rows;
      for (int i = 0; i < batch_size; ++i) rows.push_back({kLogits, &p, {}, {}, {}, &rngs[i]});
      tokens.push_back(sample_batch(rows)[0].token);
    }
    return tokens;
  };
  const auto alone = run(1);
  EXPECT_EQ(alone, run(1));
  EXPECT_EQ(alone, run(5));
  EXPECT_GT(std::set<int>(alone.begin(), alone.end()).size(), 3u);  // really sampling
}

TEST(CpuSampler, PenaltiesFollowVllm) {
  std::vector<float> logits = {1.0f, 2.0f, -2.0f, 3.0f, -1.0f};
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.presence_penalty = 0.5;
  p.frequency_penalty = 0.25;
  const std::vector<std::int32_t> prompt = {1, 2};
  const std::vector<std::int32_t> output = {2, 3, 3};
  apply_penalties(logits, p, prompt, output);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);                       // never seen
  EXPECT_FLOAT_EQ(logits[1], 1.0f);                       // prompt only: 2 / 2
  EXPECT_FLOAT_EQ(logits[2], -2.0f * 2 - 0.25f - 0.5f);   // negative: times 2; once in output
  EXPECT_FLOAT_EQ(logits[3], 3.0f / 2 - 0.5f - 0.5f);     // twice in output
  EXPECT_FLOAT_EQ(logits[4], -1.0f);
}

TEST(CpuSampler, PresenceAndFrequencyIgnorePromptTokens) {
  std::vector<float> logits = {1.0f, 1.0f};
  SamplingParams p;
  p.presence_penalty = 1.0;
  p.frequency_penalty = 1.0;
  apply_penalties(logits, p, std::vector<std::int32_t>{0}, {});
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
}

TEST(CpuSampler, MinTokensMasksEosAndStopIds) {
  const std::vector<float> logits = {0.0f, 5.0f, 4.0f, 3.0f};
  const std::vector<std::int32_t> eos = {1};
  SamplingParams p;
  p.temperature = 0.0;
  p.min_tokens = 2;
  p.stop_token_ids = {2};
  std::vector<std::int32_t> output = {3};
  EXPECT_EQ(sample_row({logits, &p, {}, output, eos, nullptr}).token, 3);
  output.push_back(3);
  EXPECT_EQ(sample_row({logits, &p, {}, output, eos, nullptr}).token, 1);
  p.ignore_eos = true;  // EOS is then an ordinary token, never masked
  output.pop_back();
  EXPECT_EQ(sample_row({logits, &p, {}, output, eos, nullptr}).token, 1);
}

TEST(CpuSampler, LogprobsAreRawLogSoftmaxWithRanks) {
  SamplingParams p;
  p.temperature = 0.0;
  p.logprobs = 3;
  p.repetition_penalty = 1.5;  // processing must not change the reported logprobs
  const std::vector<std::int32_t> prompt = {0};
  const SampledToken t = sample_row({kLogits, &p, prompt, {}, {}, nullptr});
  ASSERT_TRUE(t.logprobs);
  const auto probs = softmax(kLogits, 1.0);
  EXPECT_EQ(t.token, 1);  // token 0 penalised from 2.0 to 1.33
  EXPECT_EQ(t.logprobs->chosen.token, 1);
  EXPECT_EQ(t.logprobs->chosen.rank, 2);
  EXPECT_NEAR(t.logprobs->chosen.logprob, std::log(probs[1]), 1e-5);
  ASSERT_EQ(t.logprobs->top.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(t.logprobs->top[r].token, r);
    EXPECT_EQ(t.logprobs->top[r].rank, r + 1);
    EXPECT_NEAR(t.logprobs->top[r].logprob, std::log(probs[r]), 1e-5);
  }
}

}  // namespace
}  // namespace minivllm
