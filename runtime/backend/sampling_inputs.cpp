#include "backend/sampling_inputs.hpp"

namespace minivllm {

cuda::LogitAdjustment& SamplingInputs::entry(std::int32_t token) {
  const auto [it, added] = entry_of_.try_emplace(token, adjustments_.size());
  if (added) adjustments_.push_back({.token = token});
  return adjustments_[it->second];
}

void SamplingInputs::add_adjustments(const SamplerRow& row, int vocab) {
  const SamplingParams& p = *row.params;
  entry_of_.clear();
  auto in_vocab = [vocab](std::int32_t id) { return id >= 0 && id < vocab; };
  // EOS (unless ignore_eos) and stop ids cannot be sampled before min_tokens.
  if (static_cast<int>(row.output_ids.size()) < p.min_tokens) {
    for (std::int32_t id : p.stop_token_ids)
      if (in_vocab(id)) entry(id).flags |= cuda::LogitAdjustment::kMask;
    if (!p.ignore_eos)
      for (std::int32_t id : row.eos_ids)
        if (in_vocab(id)) entry(id).flags |= cuda::LogitAdjustment::kMask;
  }
  if (!p.has_penalties()) return;
  if (p.repetition_penalty_value() != 1.0) {
    for (std::int32_t id : row.prompt_ids)
      if (in_vocab(id)) entry(id).flags |= cuda::LogitAdjustment::kRepetition;
    for (std::int32_t id : row.output_ids)
      if (in_vocab(id)) entry(id).flags |= cuda::LogitAdjustment::kRepetition;
  }
  output_counts_.clear();
  for (std::int32_t id : row.output_ids)
    if (in_vocab(id)) ++output_counts_[id];
  // The CPU sampler's rounding: the penalty in double, then one float subtraction.
  for (const auto& [id, count] : output_counts_)
    entry(id).subtract = static_cast<float>(p.frequency_penalty * count + p.presence_penalty);
}

void SamplingInputs::build(std::span<const SamplerRow> rows, int vocab) {
  rows_.clear();
  adjustments_.clear();
  num_top_ = 0;
  for (const SamplerRow& row : rows) {
    const SamplingParams& p = *row.params;
    cuda::SamplingRow& r = rows_.emplace_back();
    if (!p.greedy()) {
      r.temperature = static_cast<float>(p.temperature_value());
      r.seed = (*row.rng)();
    }
    r.top_p = static_cast<float>(p.top_p_value());
    r.min_p = static_cast<float>(p.min_p_value());
    r.top_k = p.top_k_value();
    r.repetition_penalty = static_cast<float>(p.repetition_penalty_value());
    r.adjust_begin = static_cast<std::int32_t>(adjustments_.size());
    add_adjustments(row, vocab);
    r.adjust_end = static_cast<std::int32_t>(adjustments_.size());
    r.top_logprobs = p.logprobs ? *p.logprobs : -1;
    if (r.top_logprobs > 0) r.top_slot = num_top_++;
  }
}

}  // namespace minivllm
