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

// The model's sampling defaults (its generation_config.json): what a request's unset fields
// become, as vLLM does. Unset here too: vLLM's defaults.
struct SamplingDefaults {
  std::optional<double> temperature;
  std::optional<int> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
};

struct SamplingParams {
  int n = 1;  // completions per request
  // Unset: the model's default (SamplingDefaults), else vLLM's, shown in the accessors below.
  std::optional<double> temperature;         // 0 = greedy
  std::optional<int> top_k;                  // 0 or -1 = off
  std::optional<double> top_p;               // 1 = off
  std::optional<double> min_p;               // 0 = off
  std::optional<double> repetition_penalty;  // 1 = off; applies to prompt and output tokens
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
  bool skip_special_tokens = true;     // leave special tokens (EOS, chat markers) out of the text
  OutputKind output_kind = OutputKind::cumulative;

  static constexpr int max_logprobs = 20;

  // What sampling uses: the field, or vLLM's default where it is unset.
  double temperature_value() const { return temperature.value_or(1.0); }
  int top_k_value() const { return top_k.value_or(0); }
  double top_p_value() const { return top_p.value_or(1.0); }
  double min_p_value() const { return min_p.value_or(0.0); }
  double repetition_penalty_value() const { return repetition_penalty.value_or(1.0); }
  // These parameters with every unset field of SamplingDefaults filled from `defaults`.
  SamplingParams with_defaults(const SamplingDefaults& defaults) const;

  bool greedy() const { return temperature_value() < greedy_temperature; }
  // Whether sampling reads the tokens sampled so far (and the prompt) to adjust the logits.
  bool has_penalties() const {
    return repetition_penalty_value() != 1.0 || presence_penalty != 0.0 ||
           frequency_penalty != 0.0;
  }
  // Below this temperature sampling is greedy (vLLM's _SAMPLING_EPS).
  static constexpr double greedy_temperature = 1e-5;

  // Throws minivllm::Error naming the first invalid field and its allowed range.
  void validate() const;
};

}  // namespace minivllm
