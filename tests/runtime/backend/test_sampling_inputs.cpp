// The GPU sampler's host-side inputs (backend/sampling_inputs.hpp), without a GPU: the kernel's
// per-row settings, one seed drawn per random row, and a sparse adjustment list that, applied as
// sampling.cuh documents, gives exactly the CPU sampler's masked and penalised logits.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "backend/sampling_inputs.hpp"
#include "backend/cpu_sampler.hpp"

namespace minivllm {
namespace {

constexpr int kVocab = 50;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
const std::vector<std::int32_t> kEos = {7, 49};

std::vector<float> random_logits(std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(kVocab);
  for (float& x : v) x = dist(rng);
  return v;
}

// The kernel's adjustment of one logit (sampling.cuh's LogitAdjustment).
float adjusted(float x, const cuda::LogitAdjustment& a, float repetition_penalty) {
  if (a.flags & cuda::LogitAdjustment::kMask) x = kNegInf;
  if (a.flags & cuda::LogitAdjustment::kRepetition)
    x = x > 0.0f ? x / repetition_penalty : x * repetition_penalty;
  return x - a.subtract;
}

// What the CPU sampler samples from: min_tokens masking, then penalties.
std::vector<float> cpu_processed(std::vector<float> logits, const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  if (static_cast<int>(row.output_ids.size()) < p.min_tokens) {
    for (std::int32_t id : p.stop_token_ids)
      if (id < kVocab) logits[id] = kNegInf;
    if (!p.ignore_eos)
      for (std::int32_t id : row.eos_ids) logits[id] = kNegInf;
  }
  apply_penalties(logits, p, row.prompt_ids, row.output_ids);
  return logits;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Applies row r's entries to `logits` and checks the result against the CPU sampler, bit for bit,
// and that no token has two entries.
void expect_cpu_logits(const SamplingInputs& inputs, std::size_t r, const SamplerRow& row,
                       const std::vector<float>& logits) {
  const cuda::SamplingRow& k = inputs.rows()[r];
  std::vector<float> got = logits;
  std::set<std::int32_t> seen;
  for (int e = k.adjust_begin; e < k.adjust_end; ++e) {
    const cuda::LogitAdjustment& a = inputs.adjustments()[e];
    ASSERT_TRUE(seen.insert(a.token).second) << "two entries for token " << a.token;
    got[a.token] = adjusted(logits[a.token], a, k.repetition_penalty);
  }
  const std::vector<float> want = cpu_processed(logits, row);
  for (int v = 0; v < kVocab; ++v)
    EXPECT_TRUE(same_bits(got[v], want[v]))
        << "row " << r << " token " << v << ": " << got[v] << " vs " << want[v];
}

TEST(SamplingInputs, SettingsPerRowAndOneSeedPerRandomRow) {
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.logprobs = 3;
  SamplingParams random;
  random.temperature = 0.7;
  random.top_k = 12;
  random.top_p = 0.9;
  random.min_p = 0.05;
  random.logprobs = 0;
  SamplingParams plain;  // temperature 1, no logprobs
  plain.logprobs = 20;
  std::mt19937_64 rng_a(1), rng_b(2), rng_c(3);
  const std::vector<SamplerRow> rows = {{{}, &greedy, {}, {}, kEos, &rng_a},
                                        {{}, &random, {}, {}, kEos, &rng_b},
                                        {{}, &plain, {}, {}, kEos, &rng_c}};
  std::mt19937_64 expect_b(2), expect_c(3);
  SamplingInputs inputs;
  inputs.build(rows, kVocab);
  ASSERT_EQ(inputs.rows().size(), 3u);
  EXPECT_TRUE(inputs.adjustments().empty());

  const cuda::SamplingRow& g = inputs.rows()[0];
  EXPECT_EQ(g.temperature, 0.0f);  // greedy: no draw
  EXPECT_EQ(rng_a, std::mt19937_64(1));
  EXPECT_EQ(g.top_logprobs, 3);
  EXPECT_EQ(g.top_slot, 0);

  const cuda::SamplingRow& r = inputs.rows()[1];
  EXPECT_EQ(r.temperature, 0.7f);
  EXPECT_EQ(r.top_k, 12);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.min_p, 0.05f);
  EXPECT_EQ(r.seed, expect_b());
  EXPECT_EQ(rng_b, expect_b);  // exactly one draw
  EXPECT_EQ(r.top_logprobs, 0);

  const cuda::SamplingRow& c = inputs.rows()[2];
  EXPECT_EQ(c.seed, expect_c());
  EXPECT_EQ(c.top_logprobs, 20);
  EXPECT_EQ(c.top_slot, 1);  // the second row wanting top logprobs
  EXPECT_EQ(inputs.num_top(), 2);

  // A rebuild starts over (and draws the next seeds).
  inputs.build(std::span(rows).subspan(1, 1), kVocab);
  ASSERT_EQ(inputs.rows().size(), 1u);
  EXPECT_EQ(inputs.rows()[0].seed, expect_b());
  EXPECT_EQ(inputs.num_top(), 0);
}

TEST(SamplingInputs, MasksStopAndEosIdsBelowMinTokens) {
  std::mt19937_64 rng(5);
  const std::vector<float> logits = random_logits(rng);
  SamplingParams p;
  p.min_tokens = 3;
  p.stop_token_ids = {3, 7, 1000};  // 7 is an EOS id too; 1000 is outside the vocabulary
  const std::vector<std::int32_t> two = {1, 2}, three = {1, 2, 3};
  SamplingParams ignore = p;
  ignore.ignore_eos = true;
  const std::vector<SamplerRow> rows = {{{}, &p, {}, two, kEos, &rng},
                                        {{}, &p, {}, three, kEos, &rng},
                                        {{}, &ignore, {}, two, kEos, &rng}};
  SamplingInputs inputs;
  inputs.build(rows, kVocab);
  auto masked = [&](std::size_t r) {
    std::set<std::int32_t> ids;
    for (int e = inputs.rows()[r].adjust_begin; e < inputs.rows()[r].adjust_end; ++e)
      ids.insert(inputs.adjustments()[e].token);
    return ids;
  };
  EXPECT_EQ(masked(0), (std::set<std::int32_t>{3, 7, 49}));
  EXPECT_EQ(masked(1), std::set<std::int32_t>{});  // min_tokens reached
  EXPECT_EQ(masked(2), (std::set<std::int32_t>{3, 7}));
  for (std::size_t r = 0; r < rows.size(); ++r) expect_cpu_logits(inputs, r, rows[r], logits);
}

TEST(SamplingInputs, PenaltiesMatchTheCpuSamplerBitForBit) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int32_t> token(0, kVocab - 1);
  for (int trial = 0; trial < 50; ++trial) {
    SamplingParams p;
    p.repetition_penalty = trial % 3 == 0 ? 1.0 : 0.5 + 0.1 * (trial % 15);
    p.frequency_penalty = trial % 4 == 1 ? 0.0 : -2.0 + 0.13 * (trial % 31);
    p.presence_penalty = trial % 5 == 2 ? 0.0 : 1.7 - 0.11 * (trial % 29);
    p.min_tokens = trial % 2 == 0 ? 40 : 0;
    p.stop_token_ids = {token(rng)};
    std::vector<std::int32_t> prompt(trial % 17), output(trial % 23);
    for (auto& id : prompt) id = token(rng);
    for (auto& id : output) id = token(rng) % 10;  // repeats, to count
    const std::vector<float> logits = random_logits(rng);
    const std::vector<SamplerRow> rows = {{{}, &p, prompt, output, kEos, &rng}};
    SamplingInputs inputs;
    inputs.build(rows, kVocab);
    expect_cpu_logits(inputs, 0, rows[0], logits);
  }
}

TEST(SamplingInputs, RowsKeepTheirOwnEntries) {
  std::mt19937_64 rng(3);
  SamplingParams plain;
  SamplingParams penalised;
  penalised.presence_penalty = 0.5;
  const std::vector<std::int32_t> output_a = {4, 4, 9}, output_b = {9, 1};
  const std::vector<SamplerRow> rows = {{{}, &penalised, {}, output_a, kEos, &rng},
                                        {{}, &plain, {}, output_b, kEos, &rng},
                                        {{}, &penalised, {}, output_b, kEos, &rng}};
  SamplingInputs inputs;
  inputs.build(rows, kVocab);
  const auto& r = inputs.rows();
  EXPECT_EQ(r[0].adjust_begin, 0);
  EXPECT_EQ(r[0].adjust_end, 2);  // 4 and 9, once each
  EXPECT_EQ(r[1].adjust_begin, 2);
  EXPECT_EQ(r[1].adjust_end, 2);  // no penalties: nothing
  EXPECT_EQ(r[2].adjust_begin, 2);
  EXPECT_EQ(r[2].adjust_end, 4);
  const std::vector<float> logits = random_logits(rng);
  for (std::size_t i = 0; i < rows.size(); ++i) expect_cpu_logits(inputs, i, rows[i], logits);
}

}  // namespace
}  // namespace minivllm
