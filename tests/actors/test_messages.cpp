// The API messages cross a process boundary field by field (their inspect()): every field of a
// request's sampling parameters survives a round trip through CAF's binary serializer.
#include <vector>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <gtest/gtest.h>

#include <minivllm/actors/runtime.hpp>

namespace minivllm {
namespace {

template <class T>
T round_trip(caf::actor_system& sys, T x) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  EXPECT_FALSE(sink(x));
  T back;
  caf::binary_deserializer source{sys, buffer};
  EXPECT_FALSE(source(back));
  return back;
}

TEST(Messages, SamplingParamsKeepEveryField) {
  caf::actor_system_config cfg;
  add_runtime_types(cfg);
  caf::actor_system sys{cfg};
  SamplingParams p;
  p.n = 3;
  p.temperature = 0.7;
  p.top_k = 5;
  p.top_p = 0.9;
  p.min_p = 0.05;
  p.repetition_penalty = 1.1;
  p.presence_penalty = 0.2;
  p.frequency_penalty = 0.3;
  p.seed = 42;
  p.max_tokens = 17;
  p.min_tokens = 2;
  p.stop = {"a", "bc"};
  p.include_stop_str_in_output = true;
  p.stop_token_ids = {7, 8};
  p.ignore_eos = true;
  p.logprobs = 4;
  p.prompt_logprobs = 1;
  p.output_kind = OutputKind::delta;
  const SamplingParams q = round_trip(sys, p);
  EXPECT_EQ(q.n, p.n);
  EXPECT_EQ(q.temperature, p.temperature);
  EXPECT_EQ(q.top_k, p.top_k);
  EXPECT_EQ(q.top_p, p.top_p);
  EXPECT_EQ(q.min_p, p.min_p);
  EXPECT_EQ(q.repetition_penalty, p.repetition_penalty);
  EXPECT_EQ(q.presence_penalty, p.presence_penalty);
  EXPECT_EQ(q.frequency_penalty, p.frequency_penalty);
  EXPECT_EQ(q.seed, p.seed);
  EXPECT_EQ(q.max_tokens, p.max_tokens);
  EXPECT_EQ(q.min_tokens, p.min_tokens);
  EXPECT_EQ(q.stop, p.stop);
  EXPECT_EQ(q.include_stop_str_in_output, p.include_stop_str_in_output);
  EXPECT_EQ(q.stop_token_ids, p.stop_token_ids);
  EXPECT_EQ(q.ignore_eos, p.ignore_eos);
  EXPECT_EQ(q.logprobs, p.logprobs);
  EXPECT_EQ(q.prompt_logprobs, p.prompt_logprobs);
  EXPECT_EQ(q.output_kind, p.output_kind);
  // Unset optionals stay unset.
  const SamplingParams d = round_trip(sys, SamplingParams{});
  EXPECT_FALSE(d.seed.has_value());
  EXPECT_FALSE(d.logprobs.has_value());
  EXPECT_FALSE(d.prompt_logprobs.has_value());
}

}  // namespace
}  // namespace minivllm
