#pragma once
// A check of TOML text before toml++ parses it. Debian's toml++ 3.3 reaches undefined behaviour
// on some bytes that are not valid TOML anyway: its Unicode whitespace test hits an 'unreachable'
// for most non-ASCII characters where it looks for whitespace, and parse_key assumes (an assert,
// __builtin_assume in some builds) that a table header's name starts with a key character. The
// shipped build printed ordinary errors for them, but nothing promises it; these rules turn every
// such input into an error of ours before toml++ sees it. tests/fuzz/fuzz_toml_config.cpp drives
// toml++ header-only, with its asserts and UBSan on, behind this guard.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace minivllm {

struct TomlInputProblem {
  int line = 0;      // 1-based
  std::string what;  // "a non-ASCII character (U+00E9) outside a string or comment"
};

// The first problem in `text`, or nullopt. Rejected (none of it is valid TOML 1.0, except the
// last rule, which refuses an odd but valid corner):
//   - bytes that are not valid UTF-8;
//   - a non-ASCII character outside strings and comments (a UTF-8 byte order mark first is fine);
//   - a table header whose name does not start with a bare-key character (A-Z a-z 0-9 _ -), a
//     quote, or the ']' toml++ reports itself;
//   - a '}' inside an array;
//   - a non-ASCII character in a value that starts with a digit or a sign, up to the next
//     whitespace, ',', ']', '}' or '#' (toml++ reads that far ahead, through quotes too);
//   - in a multi-line basic string ("""), a non-ASCII character right after a backslash, or as the
//     first character after a line-ending backslash and the whitespace it trims.
std::optional<TomlInputProblem> check_toml_input(std::string_view text);

// The byte offset of the first byte that is not part of well-formed UTF-8, or text.size().
std::size_t first_invalid_utf8(std::string_view text);

}  // namespace minivllm
