#include "tokenizer/chat_format.hpp"

#include <minivllm/error.hpp>

namespace minivllm {

ChatFamily chat_family_from_name(std::string_view name) {
  if (name == "qwen3") return ChatFamily::qwen3;
  if (name == "llama3") return ChatFamily::llama3;
  throw Error("chat format: unknown model family '" + std::string(name) +
              "' (known: qwen3, llama3)");
}

ChatFamily chat_family_from_template(std::string_view chat_template) {
  if (chat_template.find("<|im_start|>") != std::string_view::npos) return ChatFamily::qwen3;
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos)
    return ChatFamily::llama3;
  throw Error(chat_template.empty()
                  ? "chat format: the tokenizer config has no chat_template"
                  : "chat format: the tokenizer config's chat_template is not one minivllm knows "
                    "(expected ChatML <|im_start|> or Llama 3 <|start_header_id|>)");
}

std::string format_chat(ChatFamily family, std::span<const ChatMessage> messages,
                        const ChatOptions& options) {
  if (messages.empty()) throw Error("chat format: no messages");
  switch (family) {
    case ChatFamily::qwen3:
      return format_chat_qwen3(messages, options);
    case ChatFamily::llama3:
      return format_chat_llama3(messages, options);
  }
  throw Error("chat format: unknown model family");
}

}  // namespace minivllm
