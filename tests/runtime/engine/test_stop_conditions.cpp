#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/stop_conditions.hpp"

namespace minivllm {
namespace {

constexpr std::int32_t kEos = 2;
const std::vector<std::int32_t> kEosIds{kEos};

Sequence make_sequence(const SamplingParams& p, int prompt_len) {
  return Sequence(0, "r", 0, std::vector<std::int32_t>(prompt_len, 7),
                  std::make_shared<const SamplingParams>(p), 0);
}

// check_stop's reason for every mix of EOS, stop ids and lengths, among them the sequences only
// their length can stop (its shortcut that reads no sampling parameters).
TEST(StopConditions, ReasonsForEosStopIdsAndLengths) {
  for (const bool ignore_eos : {false, true})
    for (const bool stop_id : {false, true})
      for (const int max_tokens : {1, 3, 5})
        for (const int max_model_len : {6, 100}) {
          SamplingParams p;
          p.ignore_eos = ignore_eos;
          p.max_tokens = max_tokens;
          if (stop_id) p.stop_token_ids = {9};
          Sequence seq = make_sequence(p, 3);
          EXPECT_EQ(seq.stops_on_length_only(), ignore_eos && !stop_id);
          for (const std::int32_t token : {5, kEos, 9, 5, 5}) {
            seq.append_token(token);
            FinishReason want = FinishReason::none;
            if ((!ignore_eos && token == kEos) || (stop_id && token == 9))
              want = FinishReason::stop;
            else if (seq.num_tokens() >= max_model_len || seq.num_output_tokens() >= max_tokens)
              want = FinishReason::length;
            const FinishReason reason = check_stop(seq, kEosIds, max_model_len, {});
            EXPECT_EQ(reason, want) << "ignore_eos " << ignore_eos << " stop id " << stop_id
                                    << " max_tokens " << max_tokens << " max_model_len "
                                    << max_model_len << " after " << seq.num_output_tokens();
            if (reason != FinishReason::none) break;
          }
        }
}

TEST(StopConditions, StopStringsTakeTheFullCheck) {
  SamplingParams p;
  p.ignore_eos = true;
  p.stop = {"x"};
  Sequence seq = make_sequence(p, 3);
  seq.append_token(5);
  EXPECT_TRUE(seq.has_stop_strings());
  EXPECT_FALSE(seq.stops_on_length_only());
}

TEST(StopConditions, SequenceCopiesTheParamsItsStepsRead) {
  SamplingParams p;
  p.max_tokens = 12;
  p.logprobs = 0;
  Sequence seq = make_sequence(p, 3);
  EXPECT_EQ(seq.max_num_tokens(), 3 + 12);
  EXPECT_TRUE(seq.wants_logprobs());
  EXPECT_FALSE(seq.wants_prompt_logprobs());
  EXPECT_FALSE(seq.has_stop_strings());
  EXPECT_FALSE(seq.stops_on_length_only());  // EOS stops it
}

}  // namespace
}  // namespace minivllm
