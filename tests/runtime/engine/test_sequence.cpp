// A Sequence keeps its newest tokens in place and stores them after the others now and then (on
// a full set, or when all its tokens are read at once): whatever the order of appends, last-token
// replacements and reads, every accessor must see the tokens appended, in order.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sequence.hpp"

namespace minivllm {
namespace {

std::vector<std::int32_t> all_of(const Sequence& seq) {
  const auto ids = seq.token_ids();
  return {ids.begin(), ids.end()};
}

void expect_tokens(const Sequence& seq, const std::vector<std::int32_t>& want, int num_prompt) {
  ASSERT_EQ(seq.num_tokens(), static_cast<int>(want.size()));
  EXPECT_EQ(seq.num_output_tokens(), static_cast<int>(want.size()) - num_prompt);
  for (int pos = 0; pos < seq.num_tokens(); ++pos) ASSERT_EQ(seq.token(pos), want[pos]) << pos;
  EXPECT_EQ(seq.last_token(), want.back());
  const auto prompt = seq.prompt_ids();
  EXPECT_EQ(std::vector<std::int32_t>(prompt.begin(), prompt.end()),
            std::vector<std::int32_t>(want.begin(), want.begin() + num_prompt));
}

TEST(Sequence, AppendsReplacementsAndReadsInAnyOrderSeeTheSameTokens) {
  auto params = std::make_shared<const SamplingParams>();
  const std::vector<std::int32_t> prompt = {11, 12, 13};
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    Sequence seq(0, "r", 0, prompt, params, 0);
    if (trial % 2 == 0) seq.reserve(64, 4);
    std::vector<std::int32_t> want = prompt;
    for (int step = 0; step < 40; ++step) {
      switch (rng() % 4) {
        case 0:  // all at once: stores the newest ones
          EXPECT_EQ(all_of(seq), want);
          break;
        case 1:  // a placeholder's token arrives
          seq.set_last_token(step * 10);
          want.back() = step * 10;
          break;
        default:
          seq.append_token(step);
          want.push_back(step);
      }
      expect_tokens(seq, want, static_cast<int>(prompt.size()));
    }
    const auto output = seq.output_ids();
    EXPECT_EQ(std::vector<std::int32_t>(output.begin(), output.end()),
              std::vector<std::int32_t>(want.begin() + 3, want.end()));
    EXPECT_EQ(all_of(seq), want);
  }
}

TEST(Sequence, ReplacesAPlaceholderStoredByAReadOfAllTokens) {
  auto params = std::make_shared<const SamplingParams>();
  Sequence seq(0, "r", 0, {1, 2}, params, 0);
  seq.append_token(-1);
  EXPECT_EQ(all_of(seq), (std::vector<std::int32_t>{1, 2, -1}));  // as a block hash reads them
  seq.set_last_token(7);
  expect_tokens(seq, {1, 2, 7}, 2);
  EXPECT_EQ(all_of(seq), (std::vector<std::int32_t>{1, 2, 7}));
}

TEST(Sequence, GrowsFromAnEmptyPrompt) {
  auto params = std::make_shared<const SamplingParams>();
  Sequence seq(0, "r", 0, {}, params, 0);
  std::vector<std::int32_t> want;
  for (std::int32_t t = 0; t < 50; ++t) {
    seq.append_token(t);
    want.push_back(t);
  }
  expect_tokens(seq, want, 0);
  EXPECT_EQ(all_of(seq), want);
}

}  // namespace
}  // namespace minivllm
