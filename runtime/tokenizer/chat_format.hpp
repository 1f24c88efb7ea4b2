#pragma once
// Chat prompts as each model family's chat template renders them (apply_chat_template with
// add_generation_prompt), written in C++ rather than run through a Jinja engine. Each family's
// format lives in its own file (chat_<family>.cpp).
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minivllm {

struct ChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  // Qwen3: an assistant turn's reasoning; when absent it is taken from <think>...</think> in
  // the content, as the template does.
  std::optional<std::string> reasoning_content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3's switch; nullopt = not passed (thinking on). Other families ignore it.
  std::optional<bool> enable_thinking;
};

enum class ChatFamily { qwen3, llama3 };

// "qwen3" or "llama3"; throws minivllm::Error for another name.
ChatFamily chat_family_from_name(std::string_view name);

// The family whose format a chat template (tokenizer_config.json "chat_template") renders,
// recognised by its markers; throws minivllm::Error if none matches.
ChatFamily chat_family_from_template(std::string_view chat_template);

// The prompt text; throws minivllm::Error for no messages or a role the format lacks.
std::string format_chat(ChatFamily family, std::span<const ChatMessage> messages,
                        const ChatOptions& options);

// One function per family (chat_qwen3.cpp, chat_llama3.cpp).
std::string format_chat_qwen3(std::span<const ChatMessage> messages, const ChatOptions& options);
std::string format_chat_llama3(std::span<const ChatMessage> messages, const ChatOptions& options);

}  // namespace minivllm
