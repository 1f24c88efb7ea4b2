// Property: decoding the encoding of any Unicode text gives the text back (after NFC for
// Qwen3, whose normalizer is NFC; exactly for Llama 3). Fixed seeds keep it reproducible.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/normalizer.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer_fixtures.hpp"

namespace minivllm {
namespace {

// Random text mixing ASCII (with whitespace runs), Latin with combining marks, CJK, emoji
// and any scalar value at all, so that the regex classes, NFC and byte fallbacks all occur.
std::string random_text(std::mt19937& rng) {
  struct Range {
    char32_t lo, hi;
  };
  static constexpr Range kRanges[] = {
      {0x20, 0x7E},     {0x09, 0x0D},     {0x20, 0x20},       {0xC0, 0x24F},    {0x300, 0x36F},
      {0x391, 0x3C9},   {0x400, 0x4FF},   {0x600, 0x6FF},     {0x900, 0x97F},   {0x3040, 0x30FF},
      {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1FAFF}, {0x2000, 0x206F}, {0x80, 0x10FFFF}};
  std::uniform_int_distribution<std::size_t> pick(0, std::size(kRanges) - 1);
  std::uniform_int_distribution<int> length(1, 60);
  std::string text;
  const int n = length(rng);
  for (int i = 0; i < n; ++i) {
    const Range r = kRanges[pick(rng)];
    char32_t cp = std::uniform_int_distribution<char32_t>(r.lo, r.hi)(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // surrogates are not scalar values
    utf8::append_code_point(text, cp);
  }
  return text;
}

TEST(RoundTrip, Qwen3GivesBackTheNfcText) {
  const Tokenizer& tok = testing::qwen3_tokenizer();
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = random_text(rng);
    ASSERT_EQ(tok.decode(tok.encode(text)), to_nfc(text)) << "case " << i;
  }
}

TEST(RoundTrip, Llama3GivesBackTheText) {
  const Tokenizer& tok = testing::llama3_tokenizer();
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = random_text(rng);
    ASSERT_EQ(tok.decode(tok.encode(text)), text) << "case " << i;
  }
}

}  // namespace
}  // namespace minivllm
