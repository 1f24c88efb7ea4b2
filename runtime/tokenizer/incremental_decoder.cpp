#include "tokenizer/incremental_decoder.hpp"

#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace minivllm {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

// Lossy UTF-8 decoding works left to right and a lead byte always ends the ill-formed run
// before it, so decoding all bytes up to an open character's lead byte gives exactly the text
// the full decode starts with.
std::string IncrementalDecoder::push(TokenId id) {
  const std::string_view bytes = tokenizer_->token_bytes(id);
  if (skip_special_tokens_ && tokenizer_->is_special(id)) return {};
  pending_ += bytes;
  const std::size_t keep = utf8::incomplete_suffix_length(pending_);
  std::string text =
      utf8::decode_lossy(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return text;
}

std::string IncrementalDecoder::finish() {
  std::string text = utf8::decode_lossy(pending_);
  pending_.clear();
  return text;
}

}  // namespace minivllm
