#pragma once
#include <cstdint>

namespace minivllm {

// A vocabulary index as models and tokenizer.json use it.
using TokenId = std::int32_t;

}  // namespace minivllm
