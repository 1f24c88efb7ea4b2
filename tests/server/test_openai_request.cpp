// The OpenAI request bodies as engine requests: fields, defaults, limits, and the 400s that name
// the field at fault.
#include <gtest/gtest.h>

#include "server/openai_request.hpp"

namespace minivllm::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.max_model_len = 512;
  return l;
}

// The ApiError a body gives, or status 0 when it parses.
ApiError error_of(bool chat, const std::string& body) {
  try {
    if (chat) parse_chat_request(body, limits());
    else parse_completion_request(body, limits());
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "");
}

TEST(OpenAiRequest, CompletionFieldsBecomeSamplingParams) {
  const ApiRequest r = parse_completion_request(
      R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
          "n": 2, "seed": -1, "stop": "x", "presence_penalty": 0.1, "frequency_penalty": 0.2,
          "logprobs": 3, "top_k": 4, "min_p": 0.05, "repetition_penalty": 1.2, "min_tokens": 1,
          "stop_token_ids": [5], "ignore_eos": true, "skip_special_tokens": false,
          "stream": true, "stream_options": {"include_usage": true}, "user": "u"})",
      limits());
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  const SamplingParams& p = r.prompts[0].params;
  EXPECT_EQ(r.prompts[0].prompt, "hi");
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_DOUBLE_EQ(*p.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*p.top_p, 0.9);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(*p.seed, ~std::uint64_t{0});  // OpenAI's signed seed, as its bit pattern
  EXPECT_EQ(p.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(*p.logprobs, 3);
  EXPECT_EQ(*p.top_k, 4);
  EXPECT_EQ(p.stop_token_ids, std::vector<std::int32_t>{5});
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_FALSE(p.skip_special_tokens);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
}

TEST(OpenAiRequest, PromptsComeAsTextTokenIdsOrListsOfThem) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["a", "b"]})", limits()).prompts.size(), 2u);
  const ApiRequest ids = parse_completion_request(R"({"prompt": [1, 2, 3]})", limits());
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(ids.prompts[0].prompt_token_ids, (std::vector<std::int32_t>{1, 2, 3}));
  const ApiRequest lists = parse_completion_request(R"({"prompt": [[1], "x", [2, 3]]})", limits());
  ASSERT_EQ(lists.prompts.size(), 3u);
  EXPECT_EQ(lists.prompts[1].prompt, "x");
  for (const auto& [bad, param] : std::vector<std::pair<const char*, const char*>>{
           {R"({"prompt": []})", "prompt"}, {R"({"prompt": {}})", "prompt"},
           {R"({"prompt": [[]]})", "prompt[0]"}, {R"({"prompt": ""})", "prompt"},
           {R"({"prompt": [true]})", "prompt[0]"}, {R"({})", "prompt"}}) {
    const ApiError e = error_of(false, bad);
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, param) << bad << ": " << e.what();
  }
}

TEST(OpenAiRequest, ChatMessagesOptionsAndDefaults) {
  const ApiRequest r = parse_chat_request(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                    {"type": "text", "text": "b"}]}],
          "logprobs": true, "top_logprobs": 2, "add_generation_prompt": false,
          "chat_template_kwargs": {"enable_thinking": false}})",
      limits());
  ASSERT_EQ(r.prompts.size(), 1u);
  const GenerateRequest& g = r.prompts[0];
  ASSERT_EQ(g.messages.size(), 1u);
  EXPECT_EQ(g.messages[0].content, "a\nb");  // text parts joined, as vLLM does
  EXPECT_TRUE(g.messages[0].content_parts.empty());
  EXPECT_FALSE(g.chat_options.add_generation_prompt);
  EXPECT_EQ(g.chat_options.enable_thinking, false);
  EXPECT_EQ(*g.params.logprobs, 2);
  EXPECT_EQ(g.params.max_tokens, 512);  // no max_tokens: to the end of the context
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                   "max_completion_tokens": 9})", limits())
                .prompts[0].params.max_tokens, 9);
}

TEST(OpenAiRequest, BadBodiesAre400sNamingTheField) {
  struct Case {
    bool chat;
    const char* body;
    const char* param;  // "" when none
  };
  const Case cases[] = {
      {false, R"({"prompt": "x",)", ""},
      {false, R"([1])", ""},
      {false, R"({"prompt": "x", "max_tokens": "many"})", "max_tokens"},
      {false, R"({"prompt": "x", "max_tokens": -5})", "max_tokens"},
      {false, R"({"prompt": "x", "n": 1e300})", "n"},
      {false, R"({"prompt": "x", "n": 17})", "n"},  // over max_n
      {false, R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {false, R"({"prompt": "x", "seed": 1.5})", "seed"},
      {false, R"({"prompt": "x", "stop": [1]})", "stop[0]"},
      {false, R"({"prompt": "x", "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})", "stop"},
      {false, R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
      {false, R"({"prompt": "x", "suffix": "y"})", "suffix"},
      {false, R"({"prompt": "x", "best_of": 2})", "best_of"},
      {false, R"({"prompt": "x", "echo": true, "logprobs": 1})", "echo"},
      {false, R"({"prompt": "x", "frobnicate": 1})", "frobnicate"},
      {false, R"({"prompt": "x", "temperature": -1})", ""},
      {true, R"({"messages": []})", "messages"},
      {true, R"({"messages": [{"role": "user"}]})", "messages[0]"},
      {true, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {true, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", "logprobs"},
      {true, R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})", "tools"},
      {true, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.chat, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(OpenAiRequest, ErrorBodiesHaveOpenAisShape) {
  const std::string body = error_body(ApiError(404, "The model `x` does not exist.", "model"));
  EXPECT_EQ(body, R"({"error":{"code":404,"message":"The model `x` does not exist.","param":"model","type":"not_found_error"}})");
}

}  // namespace
}  // namespace minivllm::server
