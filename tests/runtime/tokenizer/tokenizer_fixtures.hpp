#pragma once
// The real Qwen3 and Llama 3 tokenizers from the data folder, loaded once per test binary.
#include <stdexcept>
#include <string>

#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm::testing {

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer t = Tokenizer::from_directory(user_data_dir() / "tokenizers" / "qwen3");
  return t;
}

inline const Tokenizer& llama3_tokenizer() {
  static const Tokenizer t = Tokenizer::from_directory(user_data_dir() / "tokenizers" / "llama3");
  return t;
}

// The id of the token that is the single byte `byte` (every byte-level vocabulary has one).
inline TokenId byte_token(const Tokenizer& tok, unsigned char byte) {
  for (TokenId id = 0; static_cast<std::size_t>(id) < tok.vocab_size(); ++id)
    if (tok.token_bytes(id) == std::string(1, static_cast<char>(byte))) return id;
  throw std::runtime_error("no single-byte token");
}

// The tokenizer a golden file was made with.
inline const Tokenizer& tokenizer_for_golden(const std::string& golden) {
  return golden == "tiny-llama3" ? llama3_tokenizer() : qwen3_tokenizer();
}

}  // namespace minivllm::testing
