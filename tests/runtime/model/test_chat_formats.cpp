// Chat formats: every case of the chat goldens (Hugging Face's apply_chat_template over 17
// conversations x 4 keyword sets, text and ids, and its errors) rendered through the format the
// model's plugin picks for the tokenizer's chat_template; then the template details the goldens
// do not reach (Qwen3 <think> history, tool turns, Llama 3 trim).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/chat_formats.hpp>
#include <minivllm/error.hpp>

#include "error_message.hpp"
#include "model/plugin_registry.hpp"
#include "model_test_support.hpp"
#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

struct ChatGolden {
  std::string file;          // tests/data/golden/<file>.json
  std::string architecture;  // whose plugin renders it
};

std::vector<ChatMessage> messages_of(const json& entry) {
  std::vector<ChatMessage> messages;
  for (const json& m : entry.at("messages")) {
    ChatMessage message{m.at("role"), "", std::nullopt, {}};
    if (m.at("content").is_string()) {
      message.content = m.at("content");
    } else {
      for (const json& part : m.at("content")) message.content_parts.push_back({part.at("type"), part.at("text")});
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

class GoldenChat : public ::testing::TestWithParam<ChatGolden> {};

TEST_P(GoldenChat, ThePluginsFormatReproducesEveryCase) {
  std::ifstream in(testing::test_data_dir() / "golden" / (GetParam().file + ".json"));
  const json golden = json::parse(in);
  const Tokenizer tok = Tokenizer::from_directory(testing::user_data_dir() / "tokenizers" /
                                                  golden.at("tokenizer_dir").get<std::string>());
  const PluginRegistry plugins = PluginRegistry::load({testing::plugin_dir()});
  ModelConfig config;
  config.architectures = {GetParam().architecture};
  config.model_type = GetParam().architecture == "LlamaForCausalLM" ? "llama" : "qwen3";
  const ChatFormat format = plugins.family(config, "config.json").chat_format(tok.chat_template());
  ASSERT_NE(format, nullptr);
  ASSERT_EQ(golden.at("cases").size(), 68u);
  int errors = 0;
  for (const json& entry : golden.at("cases")) {
    SCOPED_TRACE("conversation " + std::to_string(entry.at("conversation").get<int>()) + " " +
                 entry.at("kwargs").dump());
    ChatOptions options;
    const json& kwargs = entry.at("kwargs");
    options.add_generation_prompt = kwargs.value("add_generation_prompt", true);
    if (kwargs.contains("enable_thinking")) options.enable_thinking = kwargs.at("enable_thinking").get<bool>();
    const std::vector<ChatMessage> messages = messages_of(entry);
    if (entry.contains("error")) {
      ++errors;
      EXPECT_NE(testing::error_message([&] { format(messages, options); }), "");
      continue;
    }
    const std::string text = format(messages, options);
    EXPECT_EQ(text, entry.at("text").get<std::string>());
    EXPECT_EQ(tok.encode(text, false), entry.at("ids").get<std::vector<TokenId>>());
  }
  EXPECT_EQ(errors, GetParam().file == "chat-qwen3" ? 4 : 0);
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenChat,
                         ::testing::Values(ChatGolden{"chat-qwen3", "Qwen3ForCausalLM"},
                                           ChatGolden{"chat-llama3", "LlamaForCausalLM"}),
                         [](const auto& info) { return info.param.architecture; });

TEST(ChatFormats, EachPluginKnowsOnlyItsTemplates) {
  const PluginRegistry plugins = PluginRegistry::load({testing::plugin_dir()});
  ModelConfig qwen3;
  qwen3.architectures = {"Qwen3ForCausalLM"};
  qwen3.model_type = "qwen3";
  const ModelFamily& family = plugins.family(qwen3, "config.json");
  EXPECT_NE(family.chat_format("{{ '<|im_start|>' + message.reasoning_content }}"), nullptr);
  EXPECT_EQ(family.chat_format("{{ '<|im_start|>system\\nYou are a helpful assistant.' }}"), nullptr);
  EXPECT_EQ(family.chat_format("{{ '<|start_header_id|>' }}"), nullptr);
  EXPECT_EQ(family.chat_format(""), nullptr);
}

TEST(ChatFormats, RejectNoMessagesAndUnknownRoles) {
  EXPECT_THROW(chat_formats::qwen3({}, {}), Error);
  EXPECT_THROW(chat_formats::llama3({}, {}), Error);
  const std::vector<ChatMessage> odd = {{"narrator", "hi", std::nullopt}};
  EXPECT_THROW(chat_formats::qwen3(odd, {}), Error);
}

// Expected strings rendered from Qwen3's chat_template with jinja2.
TEST(ChatFormats, Qwen3KeepsThinkingOnlyAfterTheLastQuery) {
  const std::vector<ChatMessage> history = {
      {"user", "q1", std::nullopt},
      {"assistant", "<think>\nold\n</think>\n\na1", std::nullopt},
      {"user", "q2", std::nullopt},
      {"assistant", "<think>\nnew\n</think>\n\na2", std::nullopt},
  };
  EXPECT_EQ(chat_formats::qwen3(history, {}),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nnew\n</"
            "think>\n\na2<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatFormats, Qwen3MergesToolResultsIntoOneUserTurn) {
  const std::vector<ChatMessage> messages = {
      {"system", "sys", std::nullopt},        {"user", "weather?", std::nullopt},
      {"assistant", "calling", std::nullopt}, {"tool", "sunny", std::nullopt},
      {"tool", "warm", std::nullopt},
  };
  ChatOptions options;
  options.enable_thinking = false;
  EXPECT_EQ(chat_formats::qwen3(messages, options),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\ncalling<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nwarm\n</"
            "tool_response>"
            "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormats, Qwen3UsesGivenReasoningContent) {
  const std::vector<ChatMessage> messages = {
      {"user", "q", std::nullopt},
      {"assistant", "\n\nanswer", std::string("\nwhy\n")},
  };
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(chat_formats::qwen3(messages, options),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</"
            "think>\n\nanswer<|im_end|>\n");
}

TEST(ChatFormats, Llama3TrimsContentAndAlwaysAddsTheAssistantHeader) {
  const std::vector<ChatMessage> messages = {
      {"user", " \t\xE3\x80\x80hi there\n\xC2\xA0", std::nullopt}};
  ChatOptions options;
  options.add_generation_prompt = false;  // the template ignores it
  EXPECT_EQ(chat_formats::llama3(messages, options),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatFormats, Llama3WritesAListOfPartsAsPythonDoes) {
  const std::vector<ChatMessage> messages = {
      {"user", "", std::nullopt, {{"text", "it's \"q\"\n"}, {"text", "plain"}}}};
  EXPECT_EQ(chat_formats::llama3(messages, {}),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
            "[{'type': 'text', 'text': 'it\\'s \"q\"\\n'}, {'type': 'text', 'text': 'plain'}]"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

}  // namespace
}  // namespace minivllm
