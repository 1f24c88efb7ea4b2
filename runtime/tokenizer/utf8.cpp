#include "tokenizer/utf8.hpp"

namespace minivllm::utf8 {
namespace {

// How many bytes of a well-formed character starting at s[i] are present and valid so far
// (the "maximal subpart" of the Unicode standard); `complete` says whether they form a whole
// character. The second byte's range depends on the lead byte (this excludes overlongs,
// surrogates and values past U+10FFFF); later bytes are plain continuation bytes.
struct Prefix {
  std::size_t length = 0;
  bool complete = false;
};

Prefix valid_prefix(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {1, true};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {0, false};
  }
  std::size_t n = 1;
  for (; n < need && i + n < s.size(); ++n) {
    const unsigned char b = byte(i + n);
    if (n == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  return {n, n == need};
}

}  // namespace

std::size_t valid_sequence_length(std::string_view s, std::size_t i) {
  const Prefix p = valid_prefix(s, i);
  return p.complete ? p.length : 0;
}

std::size_t first_invalid_byte(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = valid_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}

std::string decode_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const Prefix p = valid_prefix(bytes, i);
    if (p.complete) {
      out.append(bytes.substr(i, p.length));
      i += p.length;
    } else {
      out.append("\xEF\xBF\xBD");
      i += p.length == 0 ? 1 : p.length;
    }
  }
  return out;
}

std::size_t incomplete_suffix_length(std::string_view bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t k = 1; k <= 3 && k <= n; ++k) {
    const std::size_t start = n - k;
    const auto b = static_cast<unsigned char>(bytes[start]);
    if (b < 0x80) return 0;
    if (b >= 0xC0) {  // the last lead byte: held back only if its prefix is valid and open
      const Prefix p = valid_prefix(bytes, start);
      return (!p.complete && p.length == k) ? k : 0;
    }
  }
  return 0;
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace minivllm::utf8
