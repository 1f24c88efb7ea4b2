#include "actors/token_text.hpp"

#include <vector>

#include <minivllm/error.hpp>

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

}  // namespace minivllm
