// tokenizer.json loading (parse_tokenizer_spec, then the Tokenizer built from it). The input is
// tokenizer.json, then after a NUL byte tokenizer_config.json ("{}" when absent). A tokenizer
// that loads must encode and decode a few fixed texts, and its ids, without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <minivllm/error.hpp>

#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view config = nul == std::string_view::npos ? "{}" : input.substr(nul + 1);
  try {
    const minivllm::Tokenizer tok(minivllm::parse_tokenizer_spec(json, config, "fuzz"));
    for (std::string_view text : {"Hello, world! 123 héllo\n\t  ", "<|endoftext|>x", "ab"}) {
      try {
        tok.decode(tok.encode(text));
      } catch (const minivllm::Error&) {
        // a vocabulary without some byte may not encode it; that must be an error, not a crash
      }
    }
    // Every id at once (a gap in the ids is an error naming it).
    std::vector<minivllm::TokenId> all;
    for (std::size_t id = 0; id < tok.vocab_size() && id < 4096; ++id)
      all.push_back(static_cast<minivllm::TokenId>(id));
    tok.decode(all);
  } catch (const minivllm::Error&) {
  }
  return 0;
}
