// Tokenizer encode and decode on arbitrary bytes, with the real Qwen3 and Llama 3 tokenizers
// (MINIVLLM_DATA/tokenizers/{qwen3,llama3}; scripts/fuzz.sh points it at the set-up's data/).
// The first byte picks the tokenizer and the flags; the rest is the text to encode and, read as
// 3-byte little-endian numbers, the ids to decode. Properties besides "no crash":
//   - invalid UTF-8 is a clear error; its lossy decoding (valid) encodes;
//   - decode(encode(text)) is the text (after NFC for Qwen3, whose normalizer is NFC);
//   - streaming: IncrementalDecoder's pieces concatenate to decode(ids) and split no character.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/error.hpp>

#include "tokenizer/incremental_decoder.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

namespace {

using minivllm::TokenId;
using minivllm::Tokenizer;

struct Loaded {
  Tokenizer tokenizer;
  bool nfc;
};

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> loaded = [] {
    const char* data = std::getenv("MINIVLLM_DATA");
    if (data == nullptr) {
      std::fprintf(stderr, "fuzz_tokenizer_codec: set MINIVLLM_DATA to the set-up's data folder\n");
      std::exit(2);
    }
    std::vector<Loaded> out;
    try {
      out.push_back({Tokenizer::from_directory(std::string(data) + "/tokenizers/qwen3"), true});
      out.push_back({Tokenizer::from_directory(std::string(data) + "/tokenizers/llama3"), false});
    } catch (const minivllm::Error& e) {
      std::fprintf(stderr, "fuzz_tokenizer_codec: %s\n", e.what());
      std::exit(2);
    }
    return out;
  }();
  return loaded;
}

void check_streaming(const Tokenizer& tok, const std::vector<TokenId>& ids, bool skip_special) {
  const std::string whole = tok.decode(ids, skip_special);
  minivllm::IncrementalDecoder decoder(tok, skip_special);
  std::string streamed;
  for (TokenId id : ids) {
    const std::string piece = decoder.push(id);
    FUZZ_CHECK(minivllm::utf8::first_invalid_byte(piece) == piece.size());
    streamed += piece;
  }
  streamed += decoder.finish();
  FUZZ_CHECK(streamed == whole);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();  // load once, before the first input, so that no input is charged for it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Loaded& loaded = tokenizers()[data[0] & 1];
  const Tokenizer& tok = loaded.tokenizer;
  const bool add_special = data[0] & 2, skip_special = data[0] & 4;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  // Encode: the raw bytes, and when they are refused as ill-formed, their lossy decoding.
  std::string valid(text);
  try {
    tok.encode(text, add_special);
  } catch (const minivllm::Error&) {
    if (text.empty()) return 0;
    FUZZ_CHECK(minivllm::utf8::first_invalid_byte(text) != text.size());
    valid = minivllm::utf8::decode_lossy(text);
  }
  const std::vector<TokenId> ids = tok.encode(valid, /*add_special_tokens=*/false);
  const std::string expected = loaded.nfc ? minivllm::to_nfc(valid) : valid;
  FUZZ_CHECK(tok.decode(ids) == expected);
  check_streaming(tok, ids, skip_special);

  // Decode: the bytes as ids, mostly inside the vocabulary, a few just outside or negative.
  std::vector<TokenId> raw;
  const auto span = static_cast<std::int64_t>(tok.vocab_size()) + 8;
  for (std::size_t i = 0; i + 3 <= text.size(); i += 3) {
    const std::int64_t v = static_cast<unsigned char>(text[i]) |
                           static_cast<unsigned char>(text[i + 1]) << 8 |
                           static_cast<unsigned char>(text[i + 2]) << 16;
    raw.push_back(static_cast<TokenId>(v % span - 4));
  }
  try {
    tok.decode(raw, skip_special);
  } catch (const minivllm::Error&) {
    return 0;  // an id outside the vocabulary, named in the message
  }
  check_streaming(tok, raw, skip_special);
  return 0;
}
