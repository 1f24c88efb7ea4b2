// Streaming detokenization: deltas never split a UTF-8 character and add up to decode().
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "tokenizer/incremental_decoder.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer_fixtures.hpp"

namespace minivllm {
namespace {

// Streams `ids` and checks each delta is whole valid UTF-8; returns the concatenation.
std::string stream(const Tokenizer& tok, const std::vector<TokenId>& ids, bool skip_special) {
  IncrementalDecoder decoder(tok, skip_special);
  std::string text;
  for (const TokenId id : ids) {
    const std::string delta = decoder.push(id);
    EXPECT_EQ(utf8::first_invalid_byte(delta), delta.size()) << "delta splits a character";
    text += delta;
  }
  text += decoder.finish();
  return text;
}

void check_random_sequences(const Tokenizer& tok, unsigned seed) {
  std::mt19937 rng(seed);
  // Mostly byte-ish tokens (low ids are single bytes and short pieces, which split characters
  // most often), some anywhere in the vocabulary including special tokens.
  std::uniform_int_distribution<TokenId> low(0, 300),
      any(0, static_cast<TokenId>(tok.vocab_size()) - 1);
  std::uniform_int_distribution<int> length(1, 40), coin(0, 3);
  for (int round = 0; round < 300; ++round) {
    std::vector<TokenId> ids(static_cast<std::size_t>(length(rng)));
    for (TokenId& id : ids) id = coin(rng) == 0 ? any(rng) : low(rng);
    for (const bool skip : {false, true}) EXPECT_EQ(stream(tok, ids, skip), tok.decode(ids, skip));
  }
}

TEST(IncrementalDecoder, RandomQwen3IdsStreamToTheFullDecode) {
  check_random_sequences(testing::qwen3_tokenizer(), 1);
}

TEST(IncrementalDecoder, RandomLlama3IdsStreamToTheFullDecode) {
  check_random_sequences(testing::llama3_tokenizer(), 2);
}

TEST(IncrementalDecoder, HoldsBackASplitCharacter) {
  const Tokenizer& tok = testing::qwen3_tokenizer();
  // Byte tokens of the 4-byte emoji 🤖 (F0 9F A4 96) fed one by one.
  const std::vector<TokenId> ids = {testing::byte_token(tok, 0xF0), testing::byte_token(tok, 0x9F),
                                    testing::byte_token(tok, 0xA4), testing::byte_token(tok, 0x96)};
  IncrementalDecoder decoder(tok);
  EXPECT_EQ(decoder.push(ids[0]), "");
  EXPECT_EQ(decoder.push(ids[1]), "");
  EXPECT_EQ(decoder.push(ids[2]), "");
  EXPECT_EQ(decoder.push(ids[3]), "\xF0\x9F\xA4\x96");
  EXPECT_EQ(decoder.push(ids[0]), "");
  EXPECT_EQ(decoder.finish(), "\xEF\xBF\xBD");  // an unfinished character at the end
}

TEST(IncrementalDecoder, RejectsUnknownIds) {
  IncrementalDecoder decoder(testing::llama3_tokenizer());
  EXPECT_THROW(decoder.push(128256), Error);
  EXPECT_EQ(decoder.push(9906), "Hello");
}

}  // namespace
}  // namespace minivllm
