#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <minivllm/error.hpp>

#include <minivllm/sampling_params.hpp>

namespace minivllm {
namespace {

TEST(SamplingParams, DefaultsAreVllms) {
  const SamplingParams p;
  EXPECT_EQ(p.n, 1);
  EXPECT_FALSE(p.temperature || p.top_k || p.top_p || p.min_p || p.repetition_penalty);  // unset
  EXPECT_EQ(p.temperature_value(), 1.0);
  EXPECT_EQ(p.top_k_value(), 0);
  EXPECT_EQ(p.top_p_value(), 1.0);
  EXPECT_EQ(p.min_p_value(), 0.0);
  EXPECT_EQ(p.repetition_penalty_value(), 1.0);
  EXPECT_EQ(p.presence_penalty, 0.0);
  EXPECT_EQ(p.frequency_penalty, 0.0);
  EXPECT_EQ(p.max_tokens, 16);
  EXPECT_EQ(p.min_tokens, 0);
  EXPECT_FALSE(p.seed);
  EXPECT_FALSE(p.ignore_eos);
  EXPECT_FALSE(p.logprobs);
  EXPECT_FALSE(p.prompt_logprobs);
  EXPECT_EQ(p.output_kind, OutputKind::cumulative);
  EXPECT_FALSE(p.greedy());
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, ZeroTemperatureIsGreedy) {
  SamplingParams p;
  p.temperature = 0.0;
  EXPECT_TRUE(p.greedy());
}

// Each invalid value is refused with a message naming the field and its allowed range.
void expect_rejected(const std::function<void(SamplingParams&)>& set, const std::string& field,
                     const std::string& range) {
  SamplingParams p;
  set(p);
  try {
    p.validate();
    ADD_FAILURE() << field << " was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("SamplingParams." + field), std::string::npos) << msg;
    EXPECT_NE(msg.find(range), std::string::npos) << msg;
  }
}

TEST(SamplingParams, InvalidValuesNameFieldAndRange) {
  expect_rejected([](auto& p) { p.n = 0; }, "n", "at least 1");
  expect_rejected([](auto& p) { p.temperature = -0.5; }, "temperature", ">= 0");
  expect_rejected([](auto& p) { p.top_k = -2; }, "top_k", ">= 1");
  expect_rejected([](auto& p) { p.top_p = 0.0; }, "top_p", "(0, 1]");
  expect_rejected([](auto& p) { p.top_p = 1.5; }, "top_p", "(0, 1]");
  expect_rejected([](auto& p) { p.min_p = -0.1; }, "min_p", "[0, 1]");
  expect_rejected([](auto& p) { p.repetition_penalty = 0.0; }, "repetition_penalty", "> 0");
  expect_rejected([](auto& p) { p.presence_penalty = 2.5; }, "presence_penalty", "[-2, 2]");
  expect_rejected([](auto& p) { p.frequency_penalty = -3; }, "frequency_penalty", "[-2, 2]");
  expect_rejected([](auto& p) { p.max_tokens = 0; }, "max_tokens", "at least 1");
  expect_rejected([](auto& p) { p.min_tokens = 17; }, "min_tokens", "[0, max_tokens=16]");
  expect_rejected([](auto& p) { p.stop = {"ok", ""}; }, "stop", "non-empty");
  expect_rejected([](auto& p) { p.stop_token_ids = {-1}; }, "stop_token_ids", "non-negative");
  expect_rejected([](auto& p) { p.logprobs = 21; }, "logprobs", "[0, 20]");
  expect_rejected([](auto& p) { p.prompt_logprobs = -1; }, "prompt_logprobs", "[0, 20]");
}

TEST(SamplingParams, BoundaryValuesAreAccepted) {
  SamplingParams p;
  p.temperature = 0.0;
  p.top_k = -1;
  p.top_p = 1.0;
  p.min_p = 1.0;
  p.presence_penalty = -2.0;
  p.frequency_penalty = 2.0;
  p.min_tokens = p.max_tokens;
  p.logprobs = 0;
  p.prompt_logprobs = 20;
  EXPECT_NO_THROW(p.validate());
}

}  // namespace
}  // namespace minivllm

namespace minivllm {
namespace {

TEST(SamplingParams, DefaultsFillOnlyTheUnsetFields) {
  SamplingParams p;
  p.temperature = 0.7;
  const SamplingDefaults model{0.0, 20, 0.95, std::nullopt, 1.1};
  const SamplingParams r = p.with_defaults(model);
  EXPECT_EQ(r.temperature, 0.7);  // the request's own
  EXPECT_EQ(r.top_k, 20);
  EXPECT_EQ(r.top_p, 0.95);
  EXPECT_FALSE(r.min_p.has_value());
  EXPECT_DOUBLE_EQ(r.min_p_value(), 0.0);  // vLLM's
  EXPECT_EQ(r.repetition_penalty, 1.1);
  EXPECT_TRUE(r.has_penalties());
  EXPECT_DOUBLE_EQ(SamplingParams{}.temperature_value(), 1.0);
  EXPECT_FALSE(SamplingParams{}.greedy());
}

}  // namespace
}  // namespace minivllm
