#include "engine/stop_conditions.hpp"

#include <algorithm>

namespace minivllm {

namespace {

bool contains(std::span<const std::int32_t> ids, std::int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Looks for a stop string ending in the new text; cuts the text there (after it when included).
bool cut_at_stop_string(Sequence& seq, std::size_t unchanged) {
  const SamplingParams& p = seq.params();
  for (const std::string& stop : p.stop) {
    const std::size_t from = unchanged >= stop.size() ? unchanged - stop.size() + 1 : 0;
    const std::size_t at = seq.text.find(stop, from);
    if (at == std::string::npos) continue;
    seq.text.resize(p.include_stop_str_in_output ? at + stop.size() : at);
    seq.stop_str = stop;
    return true;
  }
  return false;
}

}  // namespace

FinishReason check_stop_in_full(Sequence& seq, std::span<const std::int32_t> eos_ids,
                                int max_model_len, TextStream* text) {
  const SamplingParams& p = seq.params();
  const std::int32_t last = seq.last_token();
  const bool may_stop = seq.num_output_tokens() >= p.min_tokens;
  const bool stop_token = may_stop && ((!p.ignore_eos && contains(eos_ids, last)) ||
                                       contains(p.stop_token_ids, last));
  if (text) {
    const std::size_t unchanged = seq.text.size();
    // A stop token's own text is left out unless asked for.
    if (!stop_token || p.include_stop_str_in_output) seq.text += text->push(last);
    if (!stop_token && may_stop && cut_at_stop_string(seq, unchanged)) return FinishReason::stop;
  }
  FinishReason reason = FinishReason::none;
  if (stop_token) {
    if (contains(p.stop_token_ids, last) && (p.ignore_eos || !contains(eos_ids, last)))
      seq.stop_token_id = last;
    reason = FinishReason::stop;
  } else if (seq.num_tokens() >= max_model_len || seq.num_output_tokens() >= p.max_tokens) {
    reason = FinishReason::length;
  }
  if (text && reason != FinishReason::none) seq.text += text->finish();
  return reason;
}

}  // namespace minivllm
