#pragma once
// A completion's text as its tokens come, one token at a time: the engine's only way from token
// ids to text (stop strings in the core, streamed text in the request table). A tokenizer gives
// one (engine/tokenizer_text.hpp); tests give simple ones.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace minivllm {

class TextStream {
 public:
  virtual ~TextStream() = default;
  // The text that `id` settles (possibly empty: the start of a character later tokens finish).
  virtual std::string push(std::int32_t id) = 0;
  // The rest at the end of the completion.
  virtual std::string finish() = 0;
};

// Makes one TextStream per completion (leaving special tokens out of the text when asked); empty:
// the engine has no text (no tokenizer).
using TextStreams = std::function<std::unique_ptr<TextStream>(bool skip_special_tokens)>;

}  // namespace minivllm
