#pragma once
// Text of generated tokens with a model folder's tokenizer. The model's vocabulary may be larger
// than the tokenizer's (padded embedding rows, which a random or badly trained model may
// sample): such ids have no text.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/text_stream.hpp"

namespace minivllm {

class Tokenizer;

bool has_text(const Tokenizer& tokenizer, std::int32_t id);

// Streams of decode(ids, skip_special_tokens) of the ids that have text; none without a
// tokenizer.
TextStreams tokenizer_text_streams(std::shared_ptr<const Tokenizer> tokenizer);

}  // namespace minivllm
