#pragma once
// Whether a sequence is done after its newest token, in vLLM's order: (past min_tokens) EOS
// unless ignore_eos, stop_token_ids, stop strings; then max_model_len and max_tokens.
#include <algorithm>
#include <cstdint>
#include <span>

#include "engine/sequence.hpp"
#include "engine/text_stream.hpp"

namespace minivllm {

// check_stop for a sequence whose stops need more than its length.
FinishReason check_stop_in_full(Sequence& seq, std::span<const std::int32_t> eos_ids,
                                int max_model_len, TextStream* text);

// Checks the sequence's newest token. `text` (given for a sequence with stop strings) is its
// text stream: the token's text goes into seq.text (once per token), the rest of it when the
// sequence finishes. Sets seq.stop_str / seq.stop_token_id; returns FinishReason::none while
// the sequence goes on.
inline FinishReason check_stop(Sequence& seq, std::span<const std::int32_t> eos_ids,
                               int max_model_len, TextStream* text) {
  // Only its length can stop a sequence with no stop ids or strings that ignores EOS: that check
  // reads no sampling parameters (a cold cache line per sequence in a decode step's loop) and
  // takes no call.
  if (!text && seq.stops_on_length_only())
    return seq.num_tokens() >= std::min(max_model_len, seq.max_num_tokens())
               ? FinishReason::length
               : FinishReason::none;
  return check_stop_in_full(seq, eos_ids, max_model_len, text);
}

}  // namespace minivllm
