// UTF-8 helpers: validation and Rust/Python-compatible lossy decoding (one U+FFFD per maximal
// ill-formed subpart), and the incomplete-suffix rule streaming relies on.
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"

namespace minivllm {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, FindsTheFirstInvalidByte) {
  EXPECT_EQ(utf8::first_invalid_byte("h\xC3\xA9llo \xF0\x9F\xA4\x96"), 11u);  // all valid
  EXPECT_EQ(utf8::first_invalid_byte("ab\xC3"), 2u);                          // truncated
  EXPECT_EQ(utf8::first_invalid_byte("a\xE0\x80\x80"), 1u);                   // overlong
  EXPECT_EQ(utf8::first_invalid_byte("a\xED\xA0\x80"), 1u);                   // surrogate
  EXPECT_EQ(utf8::first_invalid_byte("\xF4\x90\x80\x80"), 0u);                // past U+10FFFF
  EXPECT_EQ(utf8::first_invalid_byte(std::string("a\0b", 3)), 3u);            // NUL is valid
}

TEST(Utf8, LossyDecodingReplacesMaximalSubparts) {
  EXPECT_EQ(utf8::decode_lossy("ok"), "ok");
  EXPECT_EQ(utf8::decode_lossy("\xF0\x9F\xA4"), kFffd);  // one truncated character
  EXPECT_EQ(utf8::decode_lossy("\xF0\x9F\xA4x"), kFffd + "x");
  EXPECT_EQ(utf8::decode_lossy("\xE0\x80\x80"), kFffd + kFffd + kFffd);  // overlong: each byte
  EXPECT_EQ(utf8::decode_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate: each byte
  EXPECT_EQ(utf8::decode_lossy("\x80\xBF"), kFffd + kFffd);
  EXPECT_EQ(utf8::decode_lossy("\xC3\xF0\x9F\xA4\x96"), kFffd + "\xF0\x9F\xA4\x96");
}

TEST(Utf8, IncompleteSuffixIsOnlyAnOpenValidPrefix) {
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xF0\x9F\xA4"), 3u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xE2"), 1u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xF0\x9F\xA4\x96"), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xE0\x80"), 0u);  // can never complete
  EXPECT_EQ(utf8::incomplete_suffix_length("a\xC0"), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length(""), 0u);
}

TEST(ByteLevel, MapsTheAlphabetBackToBytes) {
  EXPECT_EQ(byte_level::bytes_of_token("Hello"), "Hello");
  EXPECT_EQ(byte_level::bytes_of_token("\xC4\xA0world"), " world");     // Ġ is the space
  EXPECT_EQ(byte_level::bytes_of_token("\xC4\x8A"), "\n");              // Ċ is the newline
  EXPECT_EQ(byte_level::bytes_of_token("\xC3\xA5"), "\xE5");            // å stands for byte 0xE5
  EXPECT_EQ(byte_level::bytes_of_token("\xE4\xB8\xAD"), std::nullopt);  // 中 is not in the alphabet
  EXPECT_EQ(byte_level::bytes_of_token(" "), std::nullopt);             // nor is a plain space
}

}  // namespace
}  // namespace minivllm
