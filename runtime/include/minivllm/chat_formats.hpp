#pragma once
// Chat formats of the plugin toolkit (mv_layers): each renders what a family's chat template
// renders, in C++ rather than through a Jinja engine, checked case by case against Hugging
// Face's apply_chat_template. A plugin's ModelFamily::chat_format picks one by the template's
// markers.
#include <span>
#include <string>
#include <string_view>

#include <minivllm/chat.hpp>

namespace minivllm::chat_formats {

// ChatML as Qwen3's template renders it without tools: the system turn first, <think> blocks
// kept only for assistant turns after the last user query, consecutive tool results merged
// into one user turn, and the enable_thinking switch.
std::string qwen3(std::span<const ChatMessage> messages, const ChatOptions& options);
// Llama 3 (Instruct) headers: BOS as text, each turn's content stripped, and the assistant
// header at the end whatever add_generation_prompt says (as its template does).
std::string llama3(std::span<const ChatMessage> messages, const ChatOptions& options);

// Qwen3's template (ChatML, <|im_start|>, with reasoning_content), and one in Llama 3's headers
// (<|start_header_id|>). Other ChatML templates (Qwen2's adds a default system turn) are not
// Qwen3's.
bool is_qwen3(std::string_view chat_template);
bool is_llama3(std::string_view chat_template);

}  // namespace minivllm::chat_formats
