#pragma once
// Per-request sampling settings, with vLLM's names, defaults and allowed ranges.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minivllm {

// What each output of a request carries (vLLM's RequestOutputKind).
enum class OutputKind : std::uint8_t {
  cumulative,  // everything so far, every step
  delta,       // only what is new since the last output (the prompt once, in the first)
  final_only,  // one output, when the request finishes
};

struct SamplingParams {
  int n = 1;                        // completions per request
  double temperature = 1.0;         // 0 = greedy
  int top_k = 0;                    // 0 or -1 = off
  double top_p = 1.0;               // 1 = off
  double min_p = 0.0;               // 0 = off
  double repetition_penalty = 1.0;  // 1 = off; applies to prompt and output tokens
  double presence_penalty = 0.0;    // applies to output tokens
  double frequency_penalty = 0.0;   // applies to output tokens
  std::optional<std::uint64_t> seed;  // per-request reproducible sampling
  int max_tokens = 16;
  int min_tokens = 0;  // EOS, stop ids and stop strings are ignored before this many tokens
  std::vector<std::string> stop;  // stop strings; excluded from the text unless included below
  bool include_stop_str_in_output = false;
  std::vector<std::int32_t> stop_token_ids;
  bool ignore_eos = false;
  std::optional<int> logprobs;         // top-k logprobs per generated token (0: sampled only)
  std::optional<int> prompt_logprobs;  // top-k logprobs per prompt token
  OutputKind output_kind = OutputKind::cumulative;

  static constexpr int max_logprobs = 20;

  bool greedy() const { return temperature < greedy_temperature; }
  // Whether sampling reads the tokens sampled so far (and the prompt) to adjust the logits.
  bool has_penalties() const {
    return repetition_penalty != 1.0 || presence_penalty != 0.0 || frequency_penalty != 0.0;
  }
  // Below this temperature sampling is greedy (vLLM's _SAMPLING_EPS).
  static constexpr double greedy_temperature = 1e-5;

  // Throws minivllm::Error naming the first invalid field and its allowed range.
  void validate() const;
};

}  // namespace minivllm
