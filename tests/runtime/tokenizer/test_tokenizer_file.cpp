// Reading tokenizer.json: both merge formats, ignore_merges, the TemplateProcessing
// post-processor and the GPT-2 regex of ByteLevel(use_regex), on a small synthetic file; and
// clear errors for what minivllm does not implement.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer_file.hpp"
#include "tokenizer/utf8.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

// Vocabulary: the 256 bytes (id = byte), "ab" 256, "bc" 257, "abc" 258; merges a+b, b+c;
// added special tokens <s> 259 and </s> 260 put around a sequence by the post-processor.
json small_tokenizer(bool merges_as_strings, bool ignore_merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    utf8::append_code_point(token, byte_level::char_of_byte(static_cast<unsigned char>(b)));
    vocab[token] = b;
  }
  vocab["ab"] = 256;
  vocab["bc"] = 257;
  vocab["abc"] = 258;
  const json merges = merges_as_strings
                          ? json::array({"a b", "b c"})
                          : json::array({json::array({"a", "b"}), json::array({"b", "c"})});
  return {
      {"added_tokens",
       {{{"id", 259}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
        {{"id", 260}, {"content", "</s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}}}},
          {{"Sequence", {{"id", "A"}}}},
          {{"SpecialToken", {{"id", "</s>"}}}}}},
        {"special_tokens", {{"<s>", {{"ids", {259}}}}, {"</s>", {{"ids", {260}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", ignore_merges}}},
  };
}

Tokenizer load(const json& file) {
  return Tokenizer(parse_tokenizer_spec(file.dump(), "{}", "test"));
}

TEST(TokenizerFile, ReadsBothMergeFormats) {
  for (const bool as_strings : {false, true}) {
    const Tokenizer tok = load(small_tokenizer(as_strings, false));
    EXPECT_EQ(tok.encode("abc abc", false), (std::vector<TokenId>{256, 99, 32, 256, 99}));
    EXPECT_EQ(tok.encode("bcx", false), (std::vector<TokenId>{257, 120}));
  }
}

TEST(TokenizerFile, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  const Tokenizer tok = load(small_tokenizer(false, true));
  EXPECT_EQ(tok.encode("abc abc", false), (std::vector<TokenId>{258, 32, 256, 99}));
}

TEST(TokenizerFile, TemplateProcessingWrapsOnlyWithSpecialTokensOn) {
  const Tokenizer tok = load(small_tokenizer(false, false));
  EXPECT_EQ(tok.encode("ab"), (std::vector<TokenId>{259, 256, 260}));
  EXPECT_EQ(tok.encode("ab", false), (std::vector<TokenId>{256}));
  EXPECT_EQ(tok.encode("<s>ab", false), (std::vector<TokenId>{259, 256}));
  EXPECT_EQ(tok.decode(tok.encode("ab"), true), "ab");
}

void expect_rejected(const json& file, const std::string& words) {
  try {
    load(file);
    ADD_FAILURE() << "accepted: " << words;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(TokenizerFile, RejectsWhatIsNotImplemented) {
  json file = small_tokenizer(false, false);
  file["decoder"] = {{"type", "WordPiece"}};
  expect_rejected(file, "decoder");
  file = small_tokenizer(false, false);
  file["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Removed"}};
  expect_rejected(file, "Split behavior 'Removed'");
  file = small_tokenizer(false, false);
  file["added_tokens"][0]["lstrip"] = true;
  expect_rejected(file, "added token '<s>'.lstrip");
  file = small_tokenizer(false, false);
  file["model"]["byte_fallback"] = true;
  expect_rejected(file, "model.byte_fallback");
  file = small_tokenizer(false, false);
  file["normalizer"] = {{"type", "Lowercase"}};
  expect_rejected(file, "normalizer type 'Lowercase'");
  file = small_tokenizer(false, false);
  file["model"]["merges"].push_back(json::array({"x", "q"}));  // "xq" is not in the vocabulary
  expect_rejected(file, "merge #2 (x q): 'xq' is not in the vocabulary");
  file = small_tokenizer(false, false);
  file["model"]["vocab"].erase("a");
  expect_rejected(file, "the vocabulary lacks the single byte 0x61");
  file = small_tokenizer(false, false);
  file["added_tokens"][1]["id"] = -5;
  expect_rejected(file, "added token '</s>' has id -5");
  file = small_tokenizer(false, false);
  file["model"]["vocab"]["zz"] = "not a number";
  expect_rejected(file, "model.vocab entry 'zz' has id \"not a number\", not an integer in 0..");
  // Floats are not ids: 1e40 once reached a float-to-integer cast that is undefined out of range.
  file = small_tokenizer(false, false);
  file["model"]["vocab"]["zz"] = 1e40;
  expect_rejected(file, "model.vocab entry 'zz' has id 1e+40, not an integer in 0..");
  file = small_tokenizer(false, false);
  file["added_tokens"][0]["id"] = 259.5;
  expect_rejected(file, "added token '<s>' has id 259.5, not an integer");
  file = small_tokenizer(false, false);
  file["added_tokens"][0]["id"] = 18446744073709551615u;
  expect_rejected(file, "added token '<s>' has id 18446744073709551615, outside 0..16777215");
  EXPECT_THROW(Tokenizer(parse_tokenizer_spec("{", "{}", "test")), Error);
  EXPECT_THROW(Tokenizer::from_directory("/nonexistent"), Error);
}

}  // namespace
}  // namespace minivllm
