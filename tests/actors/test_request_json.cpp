// actors/request_json: a generate request from JSON with vLLM's names; every field read, the
// defaults kept for absent ones, and a clear error naming the field for anything else.
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "actors/request_json.hpp"

namespace minivllm {
namespace {

// The error parse_generate_request throws, or "" when it accepts the text.
std::string error_of(const std::string& text) {
  try {
    parse_generate_request(text, SamplingParams{}, "req");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RequestJson, ReadsEveryField) {
  const GenerateRequest r = parse_generate_request(R"({
    "request_id": "r1", "prompt_token_ids": [1, 2, 2147483647],
    "n": 2, "temperature": 0.5, "top_k": 40, "top_p": 0.9, "min_p": 0.05,
    "repetition_penalty": 1.1, "presence_penalty": -0.5, "frequency_penalty": 2,
    "seed": 18446744073709551615, "max_tokens": 64, "min_tokens": 4, "stop": ["\n", "END"],
    "include_stop_str_in_output": true, "stop_token_ids": [0, 7], "ignore_eos": true,
    "logprobs": 5, "prompt_logprobs": 0})", SamplingParams{}, "req");
  EXPECT_EQ(r.request_id, "r1");
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::int32_t>{1, 2, 2147483647}));
  const SamplingParams& p = r.params;
  EXPECT_EQ(p.n, 2);
  EXPECT_DOUBLE_EQ(p.temperature.value(), 0.5);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_DOUBLE_EQ(p.top_p.value(), 0.9);
  EXPECT_DOUBLE_EQ(p.min_p.value(), 0.05);
  EXPECT_DOUBLE_EQ(p.repetition_penalty.value(), 1.1);
  EXPECT_DOUBLE_EQ(p.presence_penalty, -0.5);
  EXPECT_DOUBLE_EQ(p.frequency_penalty, 2.0);
  EXPECT_EQ(p.seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(p.max_tokens, 64);
  EXPECT_EQ(p.min_tokens, 4);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(p.include_stop_str_in_output);
  EXPECT_EQ(p.stop_token_ids, (std::vector<std::int32_t>{0, 7}));
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.logprobs, 5);
  EXPECT_EQ(p.prompt_logprobs, 0);
}

TEST(RequestJson, AbsentFieldsKeepTheDefaultsAndNullClearsTheOptionalOnes) {
  SamplingParams defaults;
  defaults.max_tokens = 7;
  defaults.temperature = 0.0;
  defaults.seed = 3;
  defaults.logprobs = 1;
  const GenerateRequest r = parse_generate_request(
      R"({"prompt": "Hi", "seed": null, "logprobs": null, "stop": "x"})", defaults, "req");
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_EQ(r.params.temperature, 0.0);
  EXPECT_FALSE(r.params.seed);
  EXPECT_FALSE(r.params.logprobs);
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"x"});
}

TEST(RequestJson, ReadsMessages) {
  const GenerateRequest r = parse_generate_request(
      R"({"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "assistant", "content": "Ok", "reasoning_content": "think"}]})",
      SamplingParams{}, "req");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_FALSE(r.messages[0].reasoning_content);
  EXPECT_EQ(r.messages[1].reasoning_content, "think");
}

TEST(RequestJson, UnknownFieldsAndWrongTypesAreErrorsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "x", "temprature": 0})", "req: field 'temprature': unknown (known: request_id, prompt,"},
      {R"({"prompt": 5})", "req: field 'prompt': expected a string, got 5"},
      {R"({"prompt": "x", "temperature": "hot"})", "field 'temperature': expected a number, got \"hot\""},
      {R"({"prompt": "x", "temperature": null})", "field 'temperature': expected a number, got null"},
      {R"({"prompt": "x", "n": 1.0})", "field 'n': expected an integer in [-2147483648, 2147483647], got 1.0"},
      {R"({"prompt": "x", "ignore_eos": 1})", "field 'ignore_eos': expected true or false, got 1"},
      {R"({"prompt": "x", "stop": 5})", "field 'stop': expected a string or an array of strings, got 5"},
      {R"({"prompt": "x", "stop": ["a", 1]})", "field 'stop[1]': expected a string, got 1"},
      {R"({"prompt_token_ids": [1, "2"]})", "field 'prompt_token_ids[1]': expected an integer"},
      {R"({"prompt_token_ids": {"a": 1}})", "field 'prompt_token_ids': expected an array of token ids, got an object"},
      {R"({"messages": "hi"})", "field 'messages': expected an array of {\"role\", \"content\"} objects"},
      {R"({"messages": [{"role": "user"}]})", "field 'messages[0]': needs both \"role\" and \"content\""},
      {R"({"messages": [{"role": "user", "content": "x", "name": "a"}]})", "field 'messages[0].name': unknown"},
      {R"({"messages": [{"role": "user", "content": 3}]})", "field 'messages[0].content': expected a string"},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_NE(error_of(text).find(expected), std::string::npos) << text << " -> " << error_of(text);
}

// What would narrow into an int or an int32 (or go negative into the uint64 seed) is an error.
TEST(RequestJson, NumbersOutsideTheFieldsTypeAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "x", "max_tokens": 2147483648})", "field 'max_tokens': expected an integer in [-2147483648, 2147483647], got 2147483648"},
      {R"({"prompt": "x", "min_tokens": -2147483649})", "field 'min_tokens': expected an integer in"},
      {R"({"prompt": "x", "top_k": 4294967297})", "field 'top_k': expected an integer in"},
      {R"({"prompt": "x", "n": 18446744073709551615})", "field 'n': expected an integer in"},
      {R"({"prompt": "x", "logprobs": 1e3})", "field 'logprobs': expected an integer in"},
      {R"({"prompt_token_ids": [2147483648]})", "field 'prompt_token_ids[0]': expected an integer in"},
      {R"({"prompt": "x", "stop_token_ids": [-2147483649]})", "field 'stop_token_ids[0]': expected an integer in"},
      {R"({"prompt": "x", "seed": -1})", "field 'seed': expected an integer in [0, 18446744073709551615], got -1"},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_NE(error_of(text).find(expected), std::string::npos) << text << " -> " << error_of(text);
}

TEST(RequestJson, NeedsExactlyOnePrompt) {
  EXPECT_NE(error_of(R"({"max_tokens": 3})").find("req: a request needs exactly one of \"prompt\", "
                                                   "\"prompt_token_ids\" and \"messages\" (it has 0)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "a", "prompt_token_ids": [1]})").find("(it has 2)"),
            std::string::npos);
}

TEST(RequestJson, SamplingParamsAreValidated) {
  EXPECT_NE(error_of(R"({"prompt": "x", "top_p": 0})").find("req: SamplingParams.top_p must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "max_tokens": 4, "min_tokens": 5})").find("SamplingParams.min_tokens"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "stop_token_ids": [-1]})").find("SamplingParams.stop_token_ids"),
            std::string::npos);
}

TEST(RequestJson, TextThatIsNotARequestObject) {
  EXPECT_NE(error_of("{\"prompt\": ").find("req: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("req: expected a request object {\"prompt\": ...}, got an array"),
            std::string::npos);
}

}  // namespace
}  // namespace minivllm
