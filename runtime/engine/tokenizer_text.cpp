#include "engine/tokenizer_text.hpp"

#include <minivllm/error.hpp>

#include "tokenizer/incremental_decoder.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {

bool has_text(const Tokenizer& tokenizer, std::int32_t id) {
  try {
    tokenizer.token_bytes(id);
    return true;
  } catch (const Error&) {
    return false;
  }
}

namespace {

class TokenizerTextStream final : public TextStream {
 public:
  TokenizerTextStream(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens)
      : tokenizer_(std::move(tokenizer)), decoder_(*tokenizer_, skip_special_tokens) {}
  std::string push(std::int32_t id) override {
    return has_text(*tokenizer_, id) ? decoder_.push(id) : std::string();
  }
  std::string finish() override { return decoder_.finish(); }

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;  // outlives decoder_
  IncrementalDecoder decoder_;
};

}  // namespace

TextStreams tokenizer_text_streams(std::shared_ptr<const Tokenizer> tokenizer) {
  if (!tokenizer) return {};
  return [tokenizer = std::move(tokenizer)](bool skip_special_tokens) -> std::unique_ptr<TextStream> {
    return std::make_unique<TokenizerTextStream>(tokenizer, skip_special_tokens);
  };
}

}  // namespace minivllm
