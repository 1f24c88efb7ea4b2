#pragma once
// A request as every door gives it to the engine, and the delta streamed back as it advances.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <minivllm/chat.hpp>

#include <minivllm/request_output.hpp>
#include <minivllm/sampling_params.hpp>

namespace minivllm {

// A request's chat messages as prompt text, in the model family's chat format for the
// tokenizer's template; throws minivllm::Error when the model has none.
using ChatRenderer = std::function<std::string(std::span<const ChatMessage> messages,
                                               const ChatOptions& options)>;

// One request. The prompt is, by precedence: `messages` (rendered in the model's chat format),
// else `prompt_token_ids` when not empty, else `prompt` (text).
struct GenerateRequest {
  std::string request_id;  // empty: the engine names it
  std::string prompt;
  std::vector<std::int32_t> prompt_token_ids;
  std::vector<ChatMessage> messages;
  SamplingParams params;
  ChatOptions chat_options;  // how `messages` are rendered
  bool add_special_tokens = true;  // a text prompt: the tokenizer's post-processor adds its own
};

// Streamed to a request's sink as its completion `index` advances. Concatenating the `text` of
// every delta of a completion gives its final text; no delta splits a UTF-8 character.
struct RequestDelta {
  std::string request_id;
  std::int32_t index = 0;
  std::vector<std::int32_t> token_ids;  // new this step
  std::string text;                     // new settled text (requests with stop strings: all at the end)
  std::vector<PositionLogprobs> logprobs;  // of the new tokens, when SamplingParams::logprobs is set
  bool finished = false;
};

}  // namespace minivllm
