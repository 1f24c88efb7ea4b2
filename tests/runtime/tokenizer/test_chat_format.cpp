// Chat formats against the goldens' apply_chat_template output (text and ids), plus the
// template details the goldens do not reach (Qwen3 <think> history, tool turns, Llama 3 trim).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "tokenizer/chat_format.hpp"
#include "tokenizer_fixtures.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

class GoldenChat : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenChat, ReproducesEveryChatEntry) {
  std::ifstream in(testing::test_data_dir() / "golden" / (GetParam() + ".json"));
  const json golden = json::parse(in);
  const Tokenizer& tok = testing::tokenizer_for_golden(GetParam());
  const ChatFamily family = chat_family_from_template(tok.chat_template());
  ASSERT_FALSE(golden.at("chat").empty());
  for (const json& entry : golden.at("chat")) {
    std::vector<ChatMessage> messages;
    for (const json& m : entry.at("messages"))
      messages.push_back({m.at("role"), m.at("content"), std::nullopt});
    ChatOptions options;
    if (entry.at("kwargs").contains("enable_thinking"))
      options.enable_thinking = entry.at("kwargs").at("enable_thinking").get<bool>();
    const std::string text = format_chat(family, messages, options);
    EXPECT_EQ(text, entry.at("text").get<std::string>());
    EXPECT_EQ(tok.encode(text, false), entry.at("ids").get<std::vector<TokenId>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenChat,
                         ::testing::Values("tiny-qwen3", "tiny-llama3", "qwen3-0.6b"));

TEST(ChatFormat, FamilyComesFromTheTokenizerConfigOrAName) {
  EXPECT_EQ(chat_family_from_template(testing::qwen3_tokenizer().chat_template()),
            ChatFamily::qwen3);
  EXPECT_EQ(chat_family_from_template(testing::llama3_tokenizer().chat_template()),
            ChatFamily::llama3);
  EXPECT_EQ(chat_family_from_name("llama3"), ChatFamily::llama3);
  EXPECT_THROW(chat_family_from_name("gpt2"), Error);
  EXPECT_THROW(chat_family_from_template("{{ messages }}"), Error);
}

TEST(ChatFormat, RejectsNoMessagesAndUnknownRoles) {
  EXPECT_THROW(format_chat(ChatFamily::qwen3, {}, {}), Error);
  const std::vector<ChatMessage> odd = {{"narrator", "hi", std::nullopt}};
  EXPECT_THROW(format_chat(ChatFamily::qwen3, odd, {}), Error);
}

// Expected strings rendered from Qwen3's chat_template with jinja2.
TEST(ChatFormat, Qwen3KeepsThinkingOnlyAfterTheLastQuery) {
  const std::vector<ChatMessage> history = {
      {"user", "q1", std::nullopt},
      {"assistant", "<think>\nold\n</think>\n\na1", std::nullopt},
      {"user", "q2", std::nullopt},
      {"assistant", "<think>\nnew\n</think>\n\na2", std::nullopt},
  };
  EXPECT_EQ(format_chat(ChatFamily::qwen3, history, {}),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nnew\n</"
            "think>\n\na2<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatFormat, Qwen3MergesToolResultsIntoOneUserTurn) {
  const std::vector<ChatMessage> messages = {
      {"system", "sys", std::nullopt},        {"user", "weather?", std::nullopt},
      {"assistant", "calling", std::nullopt}, {"tool", "sunny", std::nullopt},
      {"tool", "warm", std::nullopt},
  };
  ChatOptions options;
  options.enable_thinking = false;
  EXPECT_EQ(format_chat(ChatFamily::qwen3, messages, options),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\ncalling<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nwarm\n</"
            "tool_response>"
            "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormat, Qwen3UsesGivenReasoningContent) {
  const std::vector<ChatMessage> messages = {
      {"user", "q", std::nullopt},
      {"assistant", "\n\nanswer", std::string("\nwhy\n")},
  };
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(format_chat(ChatFamily::qwen3, messages, options),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</"
            "think>\n\nanswer<|im_end|>\n");
}

TEST(ChatFormat, Llama3TrimsContentAndAlwaysAddsTheAssistantHeader) {
  const std::vector<ChatMessage> messages = {
      {"user", " \t\xE3\x80\x80hi there\n\xC2\xA0", std::nullopt}};
  ChatOptions options;
  options.add_generation_prompt = false;  // the template ignores it
  EXPECT_EQ(format_chat(ChatFamily::llama3, messages, options),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

}  // namespace
}  // namespace minivllm
