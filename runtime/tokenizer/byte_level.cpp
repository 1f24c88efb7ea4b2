#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/utf8.hpp"

namespace minivllm::byte_level {
namespace {

struct Alphabet {
  std::array<char32_t, 256> char_of{};
  // Every alphabet character is below U+0144; byte_of[c] is the byte for c or -1.
  std::array<int, 0x144> byte_of{};

  Alphabet() {
    byte_of.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the rest map to U+0100 upwards in order.
    const auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = printable(b) ? static_cast<char32_t>(b) : next++;
      char_of[b] = c;
      byte_of[c] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t char_of_byte(unsigned char byte) { return alphabet().char_of[byte]; }

std::optional<std::string> bytes_of_token(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(token.size());
  std::size_t i = 0;
  while (i < token.size()) {
    const std::size_t n = utf8::valid_sequence_length(token, i);
    if (n == 0 || n > 2) return std::nullopt;  // alphabet characters take one or two bytes
    char32_t cp = static_cast<unsigned char>(token[i]);
    if (n == 2) cp = ((cp & 0x1F) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3F);
    if (cp >= a.byte_of.size() || a.byte_of[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(a.byte_of[cp]));
    i += n;
  }
  return out;
}

}  // namespace minivllm::byte_level
