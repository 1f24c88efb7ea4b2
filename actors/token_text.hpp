#pragma once
// Text of generated tokens when the model's vocabulary is larger than the tokenizer's (padded
// embedding rows, which a random or badly trained model may sample): such ids have no text.
#include <cstdint>
#include <span>
#include <string>

namespace minivllm {

class Tokenizer;

bool has_text(const Tokenizer& tokenizer, std::int32_t id);

// decode(ids, skip_special_tokens=true) of the ids that have text.
std::string decode_known(const Tokenizer& tokenizer, std::span<const std::int32_t> ids);

}  // namespace minivllm
