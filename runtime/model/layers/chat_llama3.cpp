// Llama 3 (Instruct) header format, as its tokenizer_config.json chat_template renders it.
#include <minivllm/chat_formats.hpp>

#include <array>

#include <minivllm/error.hpp>

namespace minivllm::chat_formats {
namespace {

// Jinja's `trim` is Python's str.strip(): it removes Unicode whitespace at both ends.
bool is_python_space(std::string_view s, std::size_t at, std::size_t& length) {
  constexpr std::array<std::string_view, 19> kMultiByte = {
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
      "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
      "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
      "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  const auto c = static_cast<unsigned char>(s[at]);
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) {
    length = 1;
    return true;
  }
  for (const std::string_view w : kMultiByte) {
    if (s.compare(at, w.size(), w) == 0) {
      length = w.size();
      return true;
    }
  }
  return false;
}

std::string_view python_strip(std::string_view s) {
  std::size_t n = 0;
  while (!s.empty() && is_python_space(s, 0, n)) s.remove_prefix(n);
  // From the end: find the start of the last character (skip continuation bytes) and test it.
  while (!s.empty()) {
    std::size_t start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (!is_python_space(s, start, n) || start + n != s.size()) break;
    s.remove_suffix(n);
  }
  return s;
}

// Python's repr() of a str, as Jinja's string filters see a list's items.
std::string python_repr(std::string_view s) {
  const bool double_quotes =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + quote;
}

// The text the template's `content | trim` sees: the content, or str() of a list of parts.
std::string content_text(const ChatMessage& m) {
  if (m.content_parts.empty()) return m.content;
  std::string s = "[";
  for (std::size_t i = 0; i < m.content_parts.size(); ++i) {
    const ChatContentPart& p = m.content_parts[i];
    s += (i ? ", " : "") + std::string("{'type': ") + python_repr(p.type) +
         ", 'text': " + python_repr(p.text) + "}";
  }
  return s + "]";
}

}  // namespace

// The template always ends with the assistant header, whatever add_generation_prompt says,
// and starts with the BOS token as text (the tokenizer itself adds none).
std::string llama3(std::span<const ChatMessage> messages, const ChatOptions&) {
  if (messages.empty()) throw Error("chat format (llama3): no messages");
  std::string out = "<|begin_of_text|>";
  for (const ChatMessage& m : messages) {
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
    out += python_strip(content_text(m));
    out += "<|eot_id|>";
  }
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

bool is_llama3(std::string_view chat_template) {
  return chat_template.find("<|start_header_id|>") != std::string_view::npos;
}

}  // namespace minivllm::chat_formats
