// Qwen3 ChatML, as its tokenizer_config.json chat_template renders it without tools: the
// system turn first, <think> blocks kept only for assistant turns after the last user query,
// consecutive tool results merged into one user turn, and the enable_thinking switch.
#include <minivllm/chat_formats.hpp>

#include <minivllm/error.hpp>

namespace minivllm::chat_formats {
namespace {

std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

bool is_tool_response(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// The index of the last user message that is a real query (not a wrapped tool response);
// the last message's index if there is none.
std::size_t last_query_index(std::span<const ChatMessage> messages) {
  for (std::size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "user" && !is_tool_response(messages[i].content)) return i;
  return messages.size() - 1;
}

void append_assistant(std::string& out, const ChatMessage& m, bool keep_reasoning, bool is_last) {
  std::string_view content = m.content;
  std::string_view reasoning;
  if (m.reasoning_content) {
    reasoning = *m.reasoning_content;
  } else if (const std::size_t close = content.rfind("</think>"); close != std::string_view::npos) {
    // content.split('</think>')[-1] and the part before the first '</think>' after its last
    // '<think>'.
    const std::string_view before = content.substr(0, content.find("</think>"));
    const std::size_t open = before.rfind("<think>");
    reasoning = lstrip_newlines(
        rstrip_newlines(open == std::string_view::npos ? before : before.substr(open + 7)));
    content = lstrip_newlines(content.substr(close + 8));
  }
  out += "<|im_start|>assistant\n";
  if (keep_reasoning && (is_last || !reasoning.empty())) {
    out += "<think>\n";
    out += rstrip_newlines(lstrip_newlines(reasoning));
    out += "\n</think>\n\n";
    out += lstrip_newlines(content);
  } else {
    out += content;
  }
  out += "<|im_end|>\n";
}

}  // namespace

std::string qwen3(std::span<const ChatMessage> messages, const ChatOptions& options) {
  if (messages.empty()) throw Error("chat format (qwen3): no messages");
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].content_parts.empty())
      throw Error("chat format (qwen3): message " + std::to_string(i) +
                  " has a list of content parts; Qwen3's chat template takes text content only "
                  "(it raises on a list)");
  std::string out;
  const std::size_t last_query = last_query_index(messages);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool is_last = i + 1 == messages.size();
    if (m.role == "user" || m.role == "system") {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      append_assistant(out, m, i > last_query, is_last);
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (is_last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    } else {
      throw Error("chat format (qwen3): message " + std::to_string(i) + " has role '" + m.role +
                  "' (expected system, user, assistant or tool)");
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

bool is_qwen3(std::string_view chat_template) {
  return chat_template.find("<|im_start|>") != std::string_view::npos &&
         chat_template.find("reasoning_content") != std::string_view::npos;
}

}  // namespace minivllm::chat_formats
