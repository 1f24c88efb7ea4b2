// The tokenizer against the Hugging Face goldens (ids with and without special tokens, decode
// with and without skipping them) and its errors for bad input.
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "tokenizer_fixtures.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

json read_golden(const std::string& name) {
  std::ifstream in(testing::test_data_dir() / "golden" / (name + ".json"));
  return json::parse(in);
}

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTokenizer, ReproducesEveryTokenizerEntry) {
  const json golden = read_golden(GetParam());
  const Tokenizer& tok = testing::tokenizer_for_golden(GetParam());
  ASSERT_FALSE(golden.at("tokenizer").empty());
  for (const json& entry : golden.at("tokenizer")) {
    const std::string text = entry.at("text");
    SCOPED_TRACE(text.substr(0, 60));
    const auto ids = entry.at("ids").get<std::vector<TokenId>>();
    EXPECT_EQ(tok.encode(text), ids);
    EXPECT_EQ(tok.encode(text, /*add_special_tokens=*/false),
              entry.at("ids_no_special").get<std::vector<TokenId>>());
    EXPECT_EQ(tok.decode(ids), entry.at("decoded").get<std::string>());
    EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true),
              entry.at("decoded_skip_special").get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenTokenizer,
                         ::testing::Values("tiny-qwen3", "tiny-llama3", "qwen3-0.6b"));

TEST(Tokenizer, SpecialTokensAreMatchedBeforeSplitting) {
  const Tokenizer& tok = testing::qwen3_tokenizer();
  const std::vector<TokenId> ids = tok.encode("a<|im_end|>b", false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], 151645);  // <|im_end|>
  EXPECT_TRUE(tok.is_special(151645));
  EXPECT_FALSE(tok.is_special(151667));  // <think> is added but not special
  EXPECT_EQ(tok.decode(tok.encode("x<think>y</think>"), true), "x<think>y</think>");
}

TEST(Tokenizer, SplitsWhitespaceAsOnigurumaDoes) {
  // Ids from HF tokenizers 0.23: U+180E is not a space to Oniguruma, NEL (U+0085) is.
  const Tokenizer& tok = testing::qwen3_tokenizer();
  EXPECT_EQ(tok.encode("\xE1\xA0\x8E's"), (std::vector<TokenId>{123970, 236, 6, 82}));
  EXPECT_EQ(tok.encode("x\xC2\x85\xC2\x85y"), (std::vector<TokenId>{87, 126, 227, 126, 227, 88}));
  EXPECT_EQ(tok.encode("a \xC2\x85 b\xC2\x85"),
            (std::vector<TokenId>{64, 2139, 227, 293, 126, 227}));
  EXPECT_EQ(tok.encode("hi\xE2\x80\xA8\xE2\x80\xA8there"),
            (std::vector<TokenId>{6023, 378, 101, 378, 101, 18532}));
}

TEST(Tokenizer, NamesTheConfigsEosToken) {
  const Tokenizer& qwen = testing::qwen3_tokenizer();
  ASSERT_EQ(qwen.eos_token(), "<|im_end|>");
  EXPECT_EQ(qwen.added_token_id(*qwen.eos_token()), 151645);
  EXPECT_EQ(qwen.bos_token(), std::nullopt);
  const Tokenizer& llama = testing::llama3_tokenizer();
  ASSERT_EQ(llama.eos_token(), "<|end_of_text|>");
  EXPECT_EQ(llama.added_token_id(*llama.eos_token()), 128001);
  EXPECT_EQ(llama.added_token_id("<|begin_of_text|>"), 128000);
  EXPECT_EQ(llama.added_token_id("hello"), std::nullopt);
}

TEST(Tokenizer, AppliesNfcForQwen3Only) {
  const std::string decomposed = "cafe\xCC\x81";  // e + combining acute
  EXPECT_EQ(testing::qwen3_tokenizer().decode(testing::qwen3_tokenizer().encode(decomposed)),
            "caf\xC3\xA9");
  EXPECT_EQ(testing::llama3_tokenizer().decode(testing::llama3_tokenizer().encode(decomposed)),
            decomposed);
}

TEST(Tokenizer, LongWordsMergeLikeShortOnes) {
  // A 5000-space run is one pre-tokenized word; it must not be slow or differ from pieces.
  const Tokenizer& tok = testing::qwen3_tokenizer();
  const std::string spaces(5000, ' ');
  const std::vector<TokenId> ids = tok.encode(spaces + "x");
  EXPECT_EQ(tok.decode(ids), spaces + "x");
  EXPECT_LT(ids.size(), 5000u / 8);
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
  // encode() is const and shares its word cache between threads.
  const Tokenizer& tok = testing::qwen3_tokenizer();
  const json golden = read_golden("tiny-qwen3");
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        for (const json& entry : golden.at("tokenizer"))
          if (tok.encode(entry.at("text").get<std::string>()) !=
              entry.at("ids").get<std::vector<TokenId>>())
            ++mismatches;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Tokenizer, RejectsEmptyText) { EXPECT_THROW(testing::qwen3_tokenizer().encode(""), Error); }

TEST(Tokenizer, RejectsInvalidUtf8NamingTheByte) {
  const Tokenizer& tok = testing::llama3_tokenizer();
  for (const std::string& bad :
       {std::string("ab\xFF"), std::string("ab\xC3"), std::string("ab\xED\xA0\x80"),
        std::string("ab\xC0\xAF"), std::string("ab\xF4\x90\x80\x80")}) {
    try {
      tok.encode(bad);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("UTF-8 (byte 2 of"), std::string::npos) << e.what();
    }
  }
}

TEST(Tokenizer, RejectsIdsOutsideTheVocabulary) {
  const Tokenizer& tok = testing::qwen3_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 151669u);
  const std::vector<TokenId> ids = {9707, 151669};
  try {
    tok.decode(ids);
    ADD_FAILURE() << "accepted an unknown id";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 151669 at position 1"), std::string::npos)
        << e.what();
  }
  const std::vector<TokenId> negative = {-1};
  EXPECT_THROW(tok.decode(negative), Error);
  EXPECT_THROW(tok.token_bytes(200000), Error);
}

TEST(Tokenizer, DecodesBrokenUtf8AsReplacementCharacters) {
  const Tokenizer& tok = testing::qwen3_tokenizer();
  // The first three bytes of the 4-byte 🤖 (F0 9F A4 96), then "x".
  const std::vector<TokenId> ids = {testing::byte_token(tok, 0xF0), testing::byte_token(tok, 0x9F),
                                    testing::byte_token(tok, 0xA4), testing::byte_token(tok, 'x')};
  EXPECT_EQ(tok.decode(ids), "\xEF\xBF\xBDx");  // one maximal ill-formed subpart -> one U+FFFD
}

}  // namespace
}  // namespace minivllm
