#include "tokenizer/split_pattern.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <minivllm/error.hpp>

#include "tokenizer/utf8.hpp"

namespace minivllm {

std::string oniguruma_to_pcre2(std::string_view pattern) {
  // Oniguruma's Unicode \s: TAB..CR, NEL and the separators (Z). PCRE2's also takes U+180E,
  // which Unicode no longer counts as a space, and lacks NEL.
  constexpr std::string_view kSpaces = "\\x{09}-\\x{0D}\\x{85}\\p{Z}";
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kSpaces) : "[" + std::string(kSpaces) + "]";
      } else if (e == 'S') {
        if (in_class) {
          throw Error("tokenizer: \\S inside a character class is not supported: " +
                      std::string(pattern));
        }
        out += "[^" + std::string(kSpaces) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct SplitPattern::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

SplitPattern::SplitPattern(std::string_view oniguruma_pattern)
    : pcre2_pattern_(oniguruma_to_pcre2(oniguruma_pattern)),
      compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre2_pattern_.data()), pcre2_pattern_.size(),
                    PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error("tokenizer: pre-tokenizer pattern rejected at offset " + std::to_string(offset) +
                " (" + reinterpret_cast<const char*>(message) + "): " + pcre2_pattern_);
  }
  // JIT makes matching several times faster; without it (an unsupported CPU) pcre2_match
  // still works, only slower.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

SplitPattern::SplitPattern(SplitPattern&&) noexcept = default;
SplitPattern& SplitPattern::operator=(SplitPattern&&) noexcept = default;
SplitPattern::~SplitPattern() = default;

void SplitPattern::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  if (!match) throw Error("tokenizer: out of memory for a regex match");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t gap_start = 0;  // where the text not yet handed out begins
  std::size_t search = 0;
  while (search < text.size()) {
    // The text was validated once on entry; checking it again per match would be quadratic.
    const int rc = pcre2_match(compiled_->code, subject, text.size(), search, PCRE2_NO_UTF_CHECK,
                               match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw Error("tokenizer: pre-tokenizer regex failed at byte " + std::to_string(search) + ": " +
                  reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const std::size_t begin = ovector[0], end = ovector[1];
    if (begin == end) {  // an empty match isolates nothing; move on by one character
      if (begin >= text.size()) break;
      const std::size_t n = utf8::valid_sequence_length(text, begin);
      search = begin + (n == 0 ? 1 : n);
      continue;
    }
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    pieces.push_back(text.substr(begin, end - begin));
    gap_start = search = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
}

}  // namespace minivllm
