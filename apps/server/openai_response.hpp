#pragma once
// OpenAI's response shapes for completions and chat completions: whole answers, stream chunks,
// usage and log-probabilities, from the engine's outputs.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/request_output.hpp>

#include "server/openai_request.hpp"

namespace minivllm {
class Tokenizer;
}

namespace minivllm::server {

// What every object of one answer shares.
struct ResponseHead {
  Api api = Api::completions;
  std::string id;     // "cmpl-..." or "chatcmpl-..."
  std::int64_t created = 0;
  std::string model;
};

// A token's text for log-probabilities: its own decoding (special tokens included), "" for ids
// outside the tokenizer's vocabulary.
std::string token_text(const Tokenizer& tokenizer, std::int32_t id);

// The "logprobs" of a choice for `positions`. Completions: {tokens, token_logprobs,
// top_logprobs, text_offset}, offsets counted from `text_offset` (advanced past them); chat:
// {content: [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json logprobs_json(Api api, const Tokenizer& tokenizer,
                             std::span<const PositionLogprobs> positions, std::size_t& text_offset);

struct Usage {
  std::size_t prompt_tokens = 0;
  std::size_t completion_tokens = 0;
  std::size_t cached_tokens = 0;
};
nlohmann::json usage_json(const Usage& usage);

// One object of a stream: "text_completion" or "chat.completion.chunk" with `choices`.
nlohmann::json chunk_json(const ResponseHead& head, nlohmann::json choices);
// A choice of a stream chunk: text (completions) or delta content (chat), logprobs, and
// finish_reason (null until the choice's last chunk). `role`: chat's first chunk of a choice.
nlohmann::json chunk_choice(Api api, int index, const std::string& text, nlohmann::json logprobs,
                            const CompletionOutput* finished, bool role = false);
// The whole answer, "text_completion" or "chat.completion"; choices built by whole_choice.
nlohmann::json whole_json(const ResponseHead& head, nlohmann::json choices, const Usage& usage);
nlohmann::json whole_choice(Api api, int index, const std::string& text, nlohmann::json logprobs,
                            const CompletionOutput& output);

// A stream event: "data: {json}\n\n".
std::string sse(const nlohmann::json& object);

}  // namespace minivllm::server
