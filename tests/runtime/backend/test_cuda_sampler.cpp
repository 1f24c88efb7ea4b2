// The GPU sampler (CudaSampler and kernels/cuda/sampling.cu) against the CPU sampler:
// - greedy tokens equal the CPU's on fresh random logits (ties, penalties, min_tokens masks), with
//   rows whole and split over blocks; every position can be the maximum;
// - random tokens follow the CPU's sampling_probs() distribution (chi-square, fixed seeds) for
//   temperature (rows whole and split, in small and large batches; wide and narrow logits),
//   min_p, top_k (in and past the shared-memory path), top_p, ties, combinations, penalties and
//   masks;
// - a row's token depends on its own logits, params and rng only, not on the batch around it
//   (nor on how many blocks share its row, in small batches or large ones);
// - log-probabilities (rank, top k, logsumexp) are the CPU's, from the raw logits;
// - the logits are left as they were; a 151936-wide batch of 256 rows samples sensibly.
// Skips without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include "backend/cuda_sampler.hpp"
#include "backend/cpu_sampler.hpp"
#include "gpu_test_support.hpp"

namespace minivllm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One row to sample: its logits and what SamplerRow points at.
struct RowCase {
  std::vector<float> logits;
  SamplingParams params;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> output;
  std::mt19937_64 rng;
};

// SamplerRows over `cases` (eos ids shared), with logits spans when `with_logits`.
std::vector<SamplerRow> sampler_rows(std::vector<RowCase>& cases,
                                     const std::vector<std::int32_t>& eos, bool with_logits) {
  std::vector<SamplerRow> rows;
  for (RowCase& c : cases)
    rows.push_back({with_logits ? std::span<const float>(c.logits) : std::span<const float>(),
                    &c.params, c.prompt, c.output, eos, &c.rng});
  return rows;
}

// What the CPU sampler samples from: min_tokens masking, then penalties (cpu_sampler.cpp).
std::vector<float> cpu_processed(const RowCase& c, const std::vector<std::int32_t>& eos) {
  std::vector<float> logits = c.logits;
  const SamplingParams& p = c.params;
  if (static_cast<int>(c.output.size()) < p.min_tokens) {
    for (std::int32_t id : p.stop_token_ids) logits.at(id) = kNegInf;
    if (!p.ignore_eos)
      for (std::int32_t id : eos) logits.at(id) = kNegInf;
  }
  apply_penalties(logits, p, c.prompt, c.output);
  return logits;
}

// The q-quantile of chi-square with `df` degrees of freedom (Wilson-Hilferty), z its normal
// quantile.
double chi_square_quantile(int df, double z) {
  const double k = df, a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Pearson's chi-square of `counts` against `probs`; tokens expected fewer than 5 times are
// pooled. Tokens of probability 0 must never be drawn. Fails above the 0.9999 quantile.
void expect_distribution(const std::vector<int>& counts, const std::vector<double>& probs,
                         int draws, const std::string& what) {
  double stat = 0.0, pooled_expected = 0.0;
  int pooled_count = 0, categories = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << what << ": token " << i << " has probability 0";
      continue;
    }
    const double e = probs[i] * draws;
    if (e < 5.0) {
      pooled_expected += e;
      pooled_count += counts[i];
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++categories;
  }
  if (pooled_expected >= 5.0) {
    stat += (pooled_count - pooled_expected) * (pooled_count - pooled_expected) / pooled_expected;
    ++categories;
  }
  if (categories < 2) return;  // one possible outcome: the zero checks above are the test
  const double limit = chi_square_quantile(categories - 1, 3.719);
  EXPECT_LT(stat, limit) << what << ": chi-square " << stat << " over " << categories
                         << " categories";
}

class CudaSamplerTest : public test::CudaKernelTest {
 protected:
  void SetUp() override {
    CudaKernelTest::SetUp();
    if (IsSkipped()) return;
    ops_ = std::make_unique<CudaOps>(DType::f32);
    sampler_ = std::make_unique<CudaSampler>(*ops_);
  }

  Tensor upload(const std::vector<RowCase>& cases) {
    const auto vocab = static_cast<std::int64_t>(cases.at(0).logits.size());
    std::vector<float> all;
    all.reserve(cases.size() * vocab);
    for (const RowCase& c : cases) all.insert(all.end(), c.logits.begin(), c.logits.end());
    return ops_->from_host(all.data(), DType::f32,
                           {static_cast<std::int64_t>(cases.size()), vocab});
  }

  std::vector<SampledToken> gpu(std::vector<RowCase>& cases) {
    const Tensor logits = upload(cases);
    return sampler_->sample(logits, sampler_rows(cases, eos_, false));
  }

  std::vector<SampledToken> cpu(std::vector<RowCase>& cases) {
    return sample_batch(sampler_rows(cases, eos_, true));
  }

  std::vector<float> normal_logits(int vocab, float sigma) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(vocab);
    for (float& x : v) x = dist(rng());
    return v;
  }

  std::int32_t argmax(const std::vector<float>& v) {
    return static_cast<std::int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
  }

  std::unique_ptr<CudaOps> ops_;
  std::unique_ptr<CudaSampler> sampler_;
  std::vector<std::int32_t> eos_ = {0};
};

TEST_F(CudaSamplerTest, GreedyMatchesTheCpuSampler) {
  // Few rows of a wide vocabulary are split over blocks; an odd width misaligns rows.
  const struct {
    int vocab, rows;
  } shapes[] = {{1000, 256}, {151936, 16}, {151936, 1}, {4999, 5}};
  for (const auto [vocab, rows] : shapes) {
    eos_ = {vocab - 1, 3};
    std::vector<RowCase> cases(rows);
    for (int r = 0; r < rows; ++r) {
      RowCase& c = cases[r];
      c.params.temperature = 0.0;
      c.logits = normal_logits(vocab, 3.0f);
      const std::int32_t best = argmax(c.logits);
      switch (r % 5) {
        case 0: break;
        case 1: {  // the maximum twice: the lower id wins
          const auto other = static_cast<std::int32_t>(random_int(0, vocab - 1));
          c.logits[other] = c.logits[best];
          break;
        }
        case 2:  // below min_tokens the EOS id cannot win, even as the maximum
          c.params.min_tokens = 4;
          c.params.stop_token_ids = {static_cast<std::int32_t>(random_int(0, vocab - 1))};
          c.logits[eos_[r % 2]] = c.logits[best] + 1.0f;
          c.output = {1, 2};
          break;
        default:  // penalties on the likely tokens
          c.params.repetition_penalty = 1.0 + 0.5 * (r % 3);
          c.params.frequency_penalty = 0.3 * (r % 4);
          c.params.presence_penalty = r % 2 == 0 ? 0.9 : -0.4;
          c.prompt = {best, static_cast<std::int32_t>(random_int(0, vocab - 1))};
          c.output = {best, best, static_cast<std::int32_t>(random_int(0, vocab - 1))};
          break;
      }
    }
    const std::vector<SampledToken> want = cpu(cases), got = gpu(cases);
    for (int r = 0; r < rows; ++r)
      EXPECT_EQ(got[r].token, want[r].token) << "vocab " << vocab << " rows " << rows
                                             << " row " << r;
  }
}

TEST_F(CudaSamplerTest, GreedyFindsTheMaximumAtEveryPosition) {
  // Two rows per call, split over blocks; the odd width misaligns the second row. Every id is
  // the maximum once in each row: no slice edge loses a token.
  constexpr int kVocab = 5003;
  eos_ = {};
  std::vector<RowCase> cases(2);
  for (RowCase& c : cases) {
    c.params.temperature = 0.0;
    c.logits = normal_logits(kVocab, 1.0f);
  }
  for (int id = 0; id < kVocab; ++id) {
    const int ids[] = {id, kVocab - 1 - id};
    for (int r = 0; r < 2; ++r) cases[r].logits[ids[r]] = 100.0f;
    const std::vector<SampledToken> got = gpu(cases);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(got[r].token, ids[r]) << "row " << r;
      cases[r].logits[ids[r]] = 0.0f;
    }
  }
}

// A case of the distribution test: settings on a row of `vocab` logits.
struct DistributionCase {
  const char* name;
  int vocab;
  double temperature;
  int top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  bool penalties = false;
  bool min_tokens = false;
  bool ties = false;  // logits rounded to steps of 0.5: many equal values
  int rows = 4096;    // per call; rows of a wide vocabulary are split over blocks
  float sigma = 2.0f;  // of the normal logits
};

TEST_F(CudaSamplerTest, RandomTokensFollowTheCpuDistribution) {
  const DistributionCase cases[] = {
      {"temperature", 64, 0.8},
      {"temperature, split rows", 6000, 0.8, 0, 1.0, 0.0, false, false, false, 8},
      // 133 rows: a block per row would leave the second wave nearly empty, so rows split.
      {"temperature, split rows of a large batch", 151936, 0.8, 0, 1.0, 0.0, false, false, false,
       133},
      {"temperature, narrow logits", 1000, 0.6, 0, 1.0, 0.0, false, false, false, 4096, 0.3f},
      {"hot", 1000, 1.7},
      {"min_p", 64, 1.0, 0, 1.0, 0.1},
      {"top_k", 64, 1.0, 10},
      {"top_k wide", 1000, 1.0, 900},
      {"top_k past shared memory", 4096, 1.0, 2500},
      {"top_p", 64, 1.2, 0, 0.7},
      {"top_p wide, odd width", 999, 2.0, 0, 0.95},
      {"top_p after top_k past shared memory", 4096, 3.0, 3000, 0.5},
      {"combined", 1000, 0.9, 40, 0.9, 0.02},
      {"ties", 64, 1.0, 7, 0.6, 0.0, false, false, true},
      {"ties wide", 1000, 1.0, 0, 0.3, 0.0, false, false, true},
      {"penalties", 64, 1.0, 0, 1.0, 0.0, true},
      {"penalties and masks with top_k and top_p", 64, 0.7, 12, 0.85, 0.0, true, true},
      {"penalties and masks, split odd-width rows", 4999, 1.0, 0, 1.0, 0.0, true, true, false,
       3},
  };
  constexpr int kDraws = 4096 * 6;
  for (const DistributionCase& dc : cases) {
    std::mt19937_64 case_rng(12345);  // fixed: the same draws every run
    std::normal_distribution<float> normal(0.0f, dc.sigma);
    std::vector<float> logits(dc.vocab);
    for (float& x : logits) x = dc.ties ? std::round(2.0f * normal(case_rng)) / 2.0f
                                        : normal(case_rng);
    RowCase proto;
    proto.logits = logits;
    proto.params.temperature = dc.temperature;
    proto.params.top_k = dc.top_k;
    proto.params.top_p = dc.top_p;
    proto.params.min_p = dc.min_p;
    std::vector<std::int32_t> order(dc.vocab);
    for (int i = 0; i < dc.vocab; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    eos_ = {order[3]};
    if (dc.penalties) {
      proto.params.repetition_penalty = 1.4;
      proto.params.frequency_penalty = 0.3;
      proto.params.presence_penalty = 0.5;
      proto.prompt = {order[0], order[5], order[9]};
      proto.output = {order[1], order[1], order[2], order[20]};
    }
    if (dc.min_tokens) {
      proto.params.min_tokens = 10;
      proto.params.stop_token_ids = {order[4]};
    }
    const std::vector<double> probs = sampling_probs(cpu_processed(proto, eos_), proto.params);

    std::vector<RowCase> batch(dc.rows, proto);
    for (int r = 0; r < dc.rows; ++r) batch[r].rng.seed(1000003ull * r + 17);
    std::vector<int> counts(dc.vocab, 0);
    const int calls = kDraws / dc.rows;
    for (int call = 0; call < calls; ++call)
      for (const SampledToken& t : gpu(batch)) ++counts.at(t.token);
    expect_distribution(counts, probs, calls * dc.rows, dc.name);
  }
}

TEST_F(CudaSamplerTest, ARowsTokenDoesNotDependOnItsBatch) {
  // Wide enough that a lone row, and rows of small batches, are split over blocks.
  constexpr int kVocab = 20000, kKinds = 7;
  auto random_case = [&](int kind) {
    RowCase c;
    c.logits = normal_logits(kVocab, 2.5f);
    c.params.temperature = kind == 0 ? 0.0 : 0.6 + 0.2 * kind;
    if (kind % 2 == 1 && kind < 5) c.params.top_k = 50;
    if (kind >= 2 && kind < 5) c.params.top_p = 0.9;
    if (kind == 3) c.params.min_p = 0.05;
    if (kind == 4 || kind == 6) {  // kind 6: plain temperature, adjusted
      c.params.presence_penalty = 0.7;
      c.output = {argmax(c.logits), 5};
    }
    c.rng.seed(rng()());
    return c;
  };
  eos_ = {1};
  for (int kind = 0; kind < kKinds; ++kind) {
    const RowCase probe = random_case(kind);
    std::vector<RowCase> alone = {probe};
    const std::int32_t token = gpu(alone).at(0).token;
    for (const int size : {2, 9, 256}) {
      std::vector<RowCase> batch;
      for (int i = 0; i < size; ++i) batch.push_back(random_case(i % kKinds));
      const auto at = static_cast<std::size_t>(random_int(0, size - 1));
      batch[at] = probe;
      EXPECT_EQ(gpu(batch).at(at).token, token)
          << "kind " << kind << " in a batch of " << size << " at " << at;
      EXPECT_EQ(batch[at].rng, alone[0].rng);  // the same draws from its stream
    }
  }
}

TEST_F(CudaSamplerTest, ALargeBatchSplitsRowsWithoutChangingTheirTokens) {
  // 133 temperature rows of Qwen3's width share the GPU with rows split in a few parts; alone, a
  // row spreads over a wave of blocks. Narrow logits (the noise decides) and wide ones.
  constexpr int kVocab = 151936, kRows = 133;
  eos_ = {151643};
  std::vector<RowCase> batch(kRows);
  for (int r = 0; r < kRows; ++r) {
    RowCase& c = batch[r];
    c.logits = normal_logits(kVocab, r % 2 == 0 ? 0.3f : 3.0f);
    c.params.temperature = 0.6;
    if (r % 7 == 3) {  // adjusted rows take the same path
      c.params.presence_penalty = 0.7;
      c.output = {argmax(c.logits), 5};
    }
    c.rng.seed(rng()());
  }
  std::vector<RowCase> alone_cases = batch;
  const std::vector<SampledToken> together = gpu(batch);
  for (int r = 0; r < kRows; ++r) {
    std::vector<RowCase> alone = {alone_cases[r]};
    EXPECT_EQ(gpu(alone).at(0).token, together[r].token) << "row " << r;
    EXPECT_EQ(alone[0].rng, batch[r].rng) << "row " << r;
  }
}

TEST_F(CudaSamplerTest, LogprobsAreTheCpusFromRawLogits) {
  for (const int vocab : {1000, 151936}) {
    const int rows = vocab == 1000 ? 64 : 8;
    eos_ = {2};
    std::vector<RowCase> cases(rows);
    for (int r = 0; r < rows; ++r) {
      RowCase& c = cases[r];
      c.logits = normal_logits(vocab, 2.0f);
      if (r % 4 == 1)  // ties: the top k and ranks break them by id
        for (float& x : c.logits) x = std::round(4.0f * x) / 4.0f;
      if (r == 3)  // one value everywhere: too many ties to finish the top k in shared memory
        std::fill(c.logits.begin(), c.logits.end(), 1.5f);
      const int ks[] = {0, 1, 5, 20};
      c.params.logprobs = ks[r % 4];
      c.params.temperature = r % 3 == 0 ? 0.0 : 1.0;
      if (r % 5 == 2) {  // penalties change the token, not the logprobs' logits
        c.params.repetition_penalty = 2.0;
        c.params.min_tokens = 5;
        c.output = {argmax(c.logits)};
      }
      c.rng.seed(static_cast<std::uint64_t>(r));
    }
    const std::vector<SampledToken> got = gpu(cases);
    for (int r = 0; r < rows; ++r) {
      const std::string where = "vocab " + std::to_string(vocab) + " row " + std::to_string(r);
      ASSERT_TRUE(got[r].logprobs) << where;
      const PositionLogprobs want =
          position_logprobs(cases[r].logits, got[r].token, *cases[r].params.logprobs);
      const PositionLogprobs& lp = *got[r].logprobs;
      EXPECT_EQ(lp.chosen.token, got[r].token) << where;
      EXPECT_EQ(lp.chosen.rank, want.chosen.rank) << where;
      EXPECT_NEAR(lp.chosen.logprob, want.chosen.logprob, 1e-4) << where;
      ASSERT_EQ(lp.top.size(), want.top.size()) << where;
      for (std::size_t i = 0; i < want.top.size(); ++i) {
        EXPECT_EQ(lp.top[i].token, want.top[i].token) << where << " top " << i;
        EXPECT_EQ(lp.top[i].rank, want.top[i].rank) << where << " top " << i;
        EXPECT_NEAR(lp.top[i].logprob, want.top[i].logprob, 1e-4) << where << " top " << i;
      }
    }
  }
}

TEST_F(CudaSamplerTest, LeavesTheLogitsAsTheyWere) {
  constexpr int kVocab = 3001, kRows = 12;  // odd width: rows not 16-byte aligned
  eos_ = {7};
  std::vector<RowCase> cases(kRows);
  for (int r = 0; r < kRows; ++r) {
    RowCase& c = cases[r];
    c.logits = normal_logits(kVocab, 2.0f);
    c.params.temperature = r % 2 == 0 ? 0.0 : 1.0;
    c.params.repetition_penalty = 1.3;
    c.params.presence_penalty = 0.2;
    c.params.min_tokens = 3;
    if (r % 3 != 2) c.params.logprobs = 4;  // the others take the one-pass path
    c.prompt = {1, 2, 3, argmax(c.logits)};
    c.output = {argmax(c.logits), 9};
  }
  const Tensor logits = upload(cases);
  const auto sampled = sampler_->sample(logits, sampler_rows(cases, eos_, false));
  const auto want = cpu(cases);
  std::vector<float> after(static_cast<std::size_t>(logits.numel()));
  ops_->to_host(logits, after.data());
  for (int r = 0; r < kRows; ++r) {
    EXPECT_EQ(std::memcmp(after.data() + static_cast<std::size_t>(r) * kVocab,
                          cases[r].logits.data(), kVocab * sizeof(float)),
              0)
        << "row " << r;
    if (r % 2 == 0) {
      EXPECT_EQ(sampled[r].token, want[r].token) << "row " << r;
    }
  }
}

TEST_F(CudaSamplerTest, FullVocabularyBatch) {
  constexpr int kVocab = 151936, kRows = 256;
  eos_ = {151643, 151645};
  std::vector<RowCase> cases(kRows);
  for (int r = 0; r < kRows; ++r) {
    RowCase& c = cases[r];
    c.logits = normal_logits(kVocab, 3.0f);
    switch (r % 3) {
      case 0: c.params.temperature = 0.0; break;
      case 1: c.params.temperature = 0.8; break;
      default:
        c.params.temperature = 0.7;
        c.params.top_k = 50;
        c.params.top_p = 0.95;
        break;
    }
    c.rng.seed(static_cast<std::uint64_t>(r) * 7919);
  }
  const std::vector<SampledToken> got = gpu(cases);
  const std::vector<SampledToken> want = cpu(cases);
  for (int r = 0; r < kRows; ++r) {
    ASSERT_GE(got[r].token, 0);
    ASSERT_LT(got[r].token, kVocab);
    if (cases[r].params.greedy()) {
      EXPECT_EQ(got[r].token, want[r].token) << "row " << r;
    } else if (r % 3 == 2) {  // drawn from the 50 kept
      const std::vector<double> probs = sampling_probs(cases[r].logits, cases[r].params);
      EXPECT_GT(probs[got[r].token], 0.0) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace minivllm
