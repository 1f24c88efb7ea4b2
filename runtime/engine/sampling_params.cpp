#include <minivllm/sampling_params.hpp>

#include <cmath>
#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

namespace {

void require(bool ok, const char* field, const std::string& range, const std::string& got) {
  if (!ok)
    throw Error("SamplingParams." + std::string(field) + " must be " + range + ", got " + got);
}

std::string str(double v) { return std::to_string(v); }

}  // namespace

SamplingParams SamplingParams::with_defaults(const SamplingDefaults& d) const {
  SamplingParams p = *this;
  if (!p.temperature) p.temperature = d.temperature;
  if (!p.top_k) p.top_k = d.top_k;
  if (!p.top_p) p.top_p = d.top_p;
  if (!p.min_p) p.min_p = d.min_p;
  if (!p.repetition_penalty) p.repetition_penalty = d.repetition_penalty;
  return p;
}

void SamplingParams::validate() const {
  const double temperature = temperature_value(), top_p = top_p_value(), min_p = min_p_value(),
               repetition_penalty = repetition_penalty_value();
  const int top_k = top_k_value();
  require(n >= 1, "n", "at least 1", std::to_string(n));
  require(std::isfinite(temperature) && temperature >= 0.0, "temperature", ">= 0",
          str(temperature));
  require(top_k >= -1, "top_k", "-1 or 0 (off) or >= 1", std::to_string(top_k));
  require(top_p > 0.0 && top_p <= 1.0, "top_p", "in (0, 1]", str(top_p));
  require(min_p >= 0.0 && min_p <= 1.0, "min_p", "in [0, 1]", str(min_p));
  require(std::isfinite(repetition_penalty) && repetition_penalty > 0.0, "repetition_penalty",
          "> 0", str(repetition_penalty));
  require(presence_penalty >= -2.0 && presence_penalty <= 2.0, "presence_penalty",
          "in [-2, 2]", str(presence_penalty));
  require(frequency_penalty >= -2.0 && frequency_penalty <= 2.0, "frequency_penalty",
          "in [-2, 2]", str(frequency_penalty));
  require(max_tokens >= 1, "max_tokens", "at least 1", std::to_string(max_tokens));
  require(min_tokens >= 0 && min_tokens <= max_tokens, "min_tokens",
          "in [0, max_tokens=" + std::to_string(max_tokens) + "]", std::to_string(min_tokens));
  for (const std::string& s : stop) require(!s.empty(), "stop", "non-empty strings", "\"\"");
  for (std::int32_t id : stop_token_ids)
    require(id >= 0, "stop_token_ids", "non-negative token ids", std::to_string(id));
  if (logprobs)
    require(*logprobs >= 0 && *logprobs <= max_logprobs, "logprobs",
            "in [0, " + std::to_string(max_logprobs) + "]", std::to_string(*logprobs));
  if (prompt_logprobs)
    require(*prompt_logprobs >= 0 && *prompt_logprobs <= max_logprobs, "prompt_logprobs",
            "in [0, " + std::to_string(max_logprobs) + "]", std::to_string(*prompt_logprobs));
}

}  // namespace minivllm
