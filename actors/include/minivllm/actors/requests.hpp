#pragma once
// What a client exchanges with the engine actor, as plain structs (no CAF here, so the
// synchronous facade and its callers stay cheap to compile; messages.hpp registers them).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_counters.hpp"
#include "engine/request_output.hpp"
#include "engine/sampling_params.hpp"
#include "engine/step_times.hpp"
#include "tokenizer/chat_format.hpp"

namespace minivllm {

// One request. The prompt is, by precedence: `messages` (rendered in the model's chat format),
// else `prompt_token_ids` when not empty, else `prompt` (text).
struct GenerateRequest {
  std::string request_id;  // empty: the engine names it
  std::string prompt;
  std::vector<std::int32_t> prompt_token_ids;
  std::vector<ChatMessage> messages;
  SamplingParams params;
};

// Streamed to a request's sink as its completion `index` advances. Concatenating the `text` of
// every delta of a completion gives its final text; no delta splits a UTF-8 character.
struct RequestDelta {
  std::string request_id;
  std::int32_t index = 0;
  std::vector<std::int32_t> token_ids;  // new this step
  std::string text;                     // new settled text (requests with stop strings: all at the end)
  bool finished = false;
};

// A snapshot of the runtime, answered by the scheduler.
struct EngineStats {
  std::uint64_t num_steps = 0;
  std::uint64_t num_running = 0;
  std::uint64_t num_waiting = 0;
  std::uint64_t num_preemptions = 0;
  std::uint64_t num_free_blocks = 0;
  std::uint64_t num_blocks = 0;
  std::string invariant_violation;  // "" when the block pool agrees with the running sequences
  StepTimes step_times;  // since the runtime started
  EngineCounters counters;  // since the runtime started
};

}  // namespace minivllm
