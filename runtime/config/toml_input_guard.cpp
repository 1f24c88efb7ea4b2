#include "config/toml_input_guard.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

namespace minivllm {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' ||
         c == '-';
}

// What ends a value for toml++ (its is_value_terminator, ASCII part).
bool is_value_end(char c) {
  return c == ' ' || c == '\t' || (c >= '\n' && c <= '\r') || c == ',' || c == ']' || c == '}' ||
         c == '#';
}

bool non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// The length of the well-formed UTF-8 sequence at text[i] (1 to 4), or 0 (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto at = [&](std::size_t k) -> unsigned {
    return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u;
  };
  const unsigned b0 = at(i);
  if (b0 < 0x80) return 1;
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return at(k) >= lo && at(k) <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

// "U+00E9" for the (well-formed) character at text[i].
std::string code_point_name(std::string_view text, std::size_t i) {
  const std::size_t n = utf8_length(text, i);
  std::uint32_t cp = static_cast<unsigned char>(text[i]) & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(cp));
  return buffer;
}

// One pass over the text that knows only as much TOML as the rules need: where strings and
// comments are, which '[' opens a table header (the first thing on a line outside any array or
// inline table) and where a value starts (after '=', and an array's elements). Past the first
// real syntax error its view may differ from toml++'s, which does not matter: toml++ stops there.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  std::optional<TomlInputProblem> run() {
    if (auto p = check_utf8()) return p;
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // the byte order mark toml++ skips
    bool line_start = true;   // nothing but whitespace yet on this line, outside any value
    bool value_next = false;  // after '=', or where an array expects its next element
    std::string open;         // the arrays ('[') and inline tables ('{') open here, innermost last
    while (i_ < s_.size() && !problem_) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        line_start = open.empty();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      const bool at_value = std::exchange(value_next, false);
      if (c == '"' || c == '\'') {
        line_start = false;
        string(c);
      } else if (non_ascii(c)) {
        fail("a non-ASCII character (" + code_point_name(s_, i_) +
             ") outside a string or comment (TOML allows them only there)");
      } else if (std::exchange(line_start, false) && c == '[') {
        table_header();
      } else if (at_value && (is_digit(c) || c == '+' || c == '-')) {
        number_or_date();
      } else if (c == '}' && !open.empty() && open.back() == '[') {
        // toml++ takes it for the start of an array's next value and asserts that it is not.
        fail("a '}' inside an array (its brackets do not match)");
      } else {
        if (c == '[' || c == '{') open.push_back(c);
        if ((c == ']' || c == '}') && !open.empty()) open.pop_back();
        value_next = c == '=' || c == '[' || (c == ',' && !open.empty() && open.back() == '[');
        ++i_;
      }
    }
    return problem_;
  }

 private:
  std::optional<TomlInputProblem> check_utf8() const {
    const std::size_t bad = first_invalid_utf8(s_);
    if (bad == s_.size()) return std::nullopt;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(s_[bad]));
    const auto line = 1 + std::count(s_.begin(), s_.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    return TomlInputProblem{static_cast<int>(line), "not valid UTF-8 (byte " + std::string(byte) +
                                                        " at offset " + std::to_string(bad) + ")"};
  }

  void fail(std::string what) {
    if (!problem_) problem_ = TomlInputProblem{line_, std::move(what)};
  }

  // At a value that starts with a digit or a sign: toml++ reads ahead to the next whitespace, ',',
  // ']', '}' or '#' to tell numbers from dates, through quotes too, and after a date and one
  // space through the time; every character it reads there must be ASCII.
  void number_or_date() {
    const auto run_end = [&](std::size_t k) {
      while (k < s_.size() && !is_value_end(s_[k])) ++k;
      return k;
    };
    std::size_t end = run_end(i_);
    if (end + 1 < s_.size() && s_[end] == ' ' && is_digit(s_[end + 1])) end = run_end(end + 1);
    for (std::size_t k = i_; k < end; ++k)
      if (non_ascii(s_[k])) {
        fail("a non-ASCII character (" + code_point_name(s_, k) + ") in the value that starts with '" +
             std::string(1, s_[i_]) +
             "' (a number or date ends at whitespace, ',', ']', '}' or '#')");
        return;
      }
    i_ = end;
  }

  // At the '[' of "[name]" or "[[name]]": the name's first character must be one toml++ expects.
  void table_header() {
    std::size_t j = i_ + 1;
    if (j < s_.size() && s_[j] == '[') ++j;
    while (j < s_.size() && (s_[j] == ' ' || s_[j] == '\t')) ++j;
    if (j < s_.size() && !is_bare_key_char(s_[j]) && s_[j] != '"' && s_[j] != '\'' && s_[j] != ']') {
      const std::string shown = non_ascii(s_[j]) ? code_point_name(s_, j) : "'" + std::string(1, s_[j]) + "'";
      fail("a table header's name must start with a letter, digit, '_', '-' or a quote, not " +
           shown);
      return;
    }
    i_ = j;  // the name and the closing brackets are scanned as ordinary text
  }

  void string(char quote) {
    const std::string triple(3, quote);
    if (s_.compare(i_, 3, triple) == 0) {
      i_ += 3;
      multi_line_string(quote, triple);
      return;
    }
    for (++i_; i_ < s_.size() && s_[i_] != '\n'; ++i_) {
      if (s_[i_] == quote) {
        ++i_;
        return;
      }
      if (quote == '"' && s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] != '\n') ++i_;
    }
    // Unterminated at the line's end or the text's: toml++ reports it.
  }

  void multi_line_string(char quote, const std::string& triple) {
    while (i_ < s_.size() && !problem_) {
      const char c = s_[i_];
      if (c == quote && s_.compare(i_, 3, triple) == 0) {
        while (i_ < s_.size() && s_[i_] == quote) ++i_;  // up to two more belong to the string
        return;
      }
      if (c == '\n') ++line_;
      if (quote == '"' && c == '\\') {
        ++i_;
        if (i_ < s_.size() && non_ascii(s_[i_])) {
          fail("a non-ASCII character (" + code_point_name(s_, i_) +
               ") right after a backslash in a multi-line string (write it as \\u or \\U)");
          return;
        }
        if (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) {
          // A line-ending backslash: toml++ trims the whitespace and line breaks after it,
          // testing each character with the whitespace table that non-ASCII ones break.
          for (; i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n');
               ++i_)
            if (s_[i_] == '\n') ++line_;
          if (i_ < s_.size() && non_ascii(s_[i_]))
            fail("a non-ASCII character (" + code_point_name(s_, i_) +
                 ") first after a line-ending backslash in a multi-line string (put an ASCII "
                 "character or an escape before it)");
          continue;  // the character after the whitespace is scanned as usual
        }
      }
      ++i_;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int line_ = 1;
  std::optional<TomlInputProblem> problem_;
};

}  // namespace

std::optional<TomlInputProblem> check_toml_input(std::string_view text) { return Scanner(text).run(); }

std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  for (std::size_t n; i < text.size() && (n = utf8_length(text, i)) != 0;) i += n;
  return i;
}

}  // namespace minivllm
