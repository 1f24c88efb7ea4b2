#pragma once
// Added tokens (tokenizer.json "added_tokens"): matched in the raw text before normalization
// and pre-tokenization, the longest one wins at the leftmost position (as HF does).
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_id.hpp"

namespace minivllm {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;  // dropped by decode(skip_special_tokens)
};

class AddedVocabulary {
 public:
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  struct Match {
    std::size_t begin = 0, end = 0;  // byte range in the text
    TokenId id = 0;
  };
  // The first match at or after `from`; begin == text.size() when there is none.
  Match find(std::string_view text, std::size_t from) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by first byte, longest content first.
  std::array<std::vector<std::size_t>, 256> by_first_byte_;
};

}  // namespace minivllm
