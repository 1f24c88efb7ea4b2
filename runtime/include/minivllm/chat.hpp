#pragma once
// Chat conversations as a model family's chat template renders them into prompt text. A plugin
// chooses the format for a tokenizer's chat_template (ModelFamily::chat_format); the formats
// themselves are building blocks in the plugin toolkit (minivllm/chat_formats.hpp).
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace minivllm {

// One part of a message whose content is a list (OpenAI's content parts).
struct ChatContentPart {
  std::string type;  // "text"
  std::string text;
};

struct ChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  // Qwen3: an assistant turn's reasoning; when absent it is taken from <think>...</think> in
  // the content, as the template does.
  std::optional<std::string> reasoning_content;
  // Not empty: the content was given as this list of parts (and `content` is unused). A format
  // renders it as its template renders a list, or throws where the template raises.
  std::vector<ChatContentPart> content_parts;
};

// apply_chat_template's keyword arguments.
struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3's switch; nullopt = not passed (thinking on). Formats without it ignore it.
  std::optional<bool> enable_thinking;
};

// Renders messages as the template does (the special tokens as text); throws minivllm::Error for
// no messages or a role the format lacks, where the template raises.
using ChatFormat = std::string (*)(std::span<const ChatMessage> messages,
                                   const ChatOptions& options);

}  // namespace minivllm
