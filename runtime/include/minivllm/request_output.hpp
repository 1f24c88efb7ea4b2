#pragma once
// What a caller gets back for a request, shaped like vLLM's RequestOutput: cumulative so far,
// one CompletionOutput per sampled completion (n of them).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <minivllm/logprobs.hpp>

namespace minivllm {

enum class FinishReason : std::uint8_t { none, stop, length, abort };

const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", or "" for none

struct CompletionOutput {
  int index = 0;
  std::string text;
  std::vector<std::int32_t> token_ids;
  std::vector<PositionLogprobs> logprobs;  // empty unless SamplingParams::logprobs is set
  FinishReason finish_reason = FinishReason::none;
  std::optional<std::string> stop_str;
  std::optional<std::int32_t> stop_token_id;
};

struct RequestOutput {
  std::string request_id;
  std::vector<std::int32_t> prompt_token_ids;
  std::vector<std::optional<PositionLogprobs>> prompt_logprobs;
  std::vector<CompletionOutput> outputs;
  int num_cached_tokens = 0;
  bool finished = false;
};

}  // namespace minivllm
