#pragma once
// The CPU sampler: turns one row of logits per sequence into the next token, applying
// SamplingParams the way vLLM does (min_tokens masking, penalties, then greedy or temperature,
// min_p, top_k, top_p). It is the reference the GPU sampler is checked against.
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include <minivllm/logprobs.hpp>
#include <minivllm/sampling_params.hpp>

namespace minivllm {

struct SamplerRow {
  std::span<const float> logits;  // one per vocabulary entry, straight from the model
  const SamplingParams* params = nullptr;
  std::span<const std::int32_t> prompt_ids;
  std::span<const std::int32_t> output_ids;  // generated so far
  std::span<const std::int32_t> eos_ids;     // masked, like stop_token_ids, below min_tokens
  std::mt19937_64* rng = nullptr;            // the sequence's own stream
};

struct SampledToken {
  std::int32_t token = 0;
  std::optional<PositionLogprobs> logprobs;  // set when params->logprobs is set
};

// Samples each row independently: a row's result depends only on that row.
std::vector<SampledToken> sample_batch(std::span<const SamplerRow> rows);
SampledToken sample_row(const SamplerRow& row);

// The steps of sample_row, exposed for tests.

// vLLM's penalties: repetition (prompt and output tokens: positive logits divided, negative
// multiplied), then frequency (times the count in the output) and presence (once if present).
void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     std::span<const std::int32_t> prompt_ids,
                     std::span<const std::int32_t> output_ids);

// The distribution random sampling draws from: softmax(logits / temperature), then min_p, top_k
// and top_p masks, renormalised. Requires a non-greedy temperature.
std::vector<double> sampling_probs(std::span<const float> logits, const SamplingParams& params);

// Log-softmax of `logits` for `chosen` (with its rank) and the `k` most likely tokens.
PositionLogprobs position_logprobs(std::span<const float> logits, std::int32_t chosen, int k);

}  // namespace minivllm
