#include "engine/tokenizer_text.hpp"

#include <vector>

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

std::string decode_known(const Tokenizer& tokenizer, std::span<const std::int32_t> ids) {
  std::vector<std::int32_t> known;
  known.reserve(ids.size());
  for (std::int32_t id : ids)
    if (has_text(tokenizer, id)) known.push_back(id);
  return tokenizer.decode(known, /*skip_special_tokens=*/true);
}

namespace {

class TokenizerTextStream final : public TextStream {
 public:
  explicit TokenizerTextStream(std::shared_ptr<const Tokenizer> tokenizer)
      : tokenizer_(std::move(tokenizer)), decoder_(*tokenizer_, /*skip_special_tokens=*/true) {}
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
  return [tokenizer = std::move(tokenizer)]() -> std::unique_ptr<TextStream> {
    return std::make_unique<TokenizerTextStream>(tokenizer);
  };
}

}  // namespace minivllm
