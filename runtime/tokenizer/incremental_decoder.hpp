#pragma once
// Streaming detokenization: ids arrive one by one and each call returns the text that is now
// settled. A UTF-8 character split across tokens is held back until it completes, so no delta
// splits a character, and the deltas plus finish() concatenate to exactly decode(all ids).
#include <string>

#include "tokenizer/token_id.hpp"

namespace minivllm {

class Tokenizer;

class IncrementalDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // The new text after `id` (possibly empty). Throws minivllm::Error for an unknown id; the
  // decoder is unchanged then.
  std::string push(TokenId id);

  // The rest at the end of the stream: bytes of an unfinished character become U+FFFD.
  std::string finish();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;  // the start of a character that later bytes may complete
};

}  // namespace minivllm
