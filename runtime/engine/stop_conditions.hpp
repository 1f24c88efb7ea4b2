#pragma once
// Whether a sequence is done after its newest token, in vLLM's order: (past min_tokens) EOS
// unless ignore_eos, stop_token_ids, stop strings; then max_model_len and max_tokens.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "engine/sequence.hpp"

namespace minivllm {

// Token ids to text (the whole output each time, so multi-byte characters come out whole).
using Detokenizer = std::function<std::string(std::span<const std::int32_t>)>;

// Updates seq.text (when `detokenize` is set; stop strings need it) and seq.stop_str /
// seq.stop_token_id; returns FinishReason::none while the sequence goes on.
FinishReason check_stop(Sequence& seq, std::span<const std::int32_t> eos_ids, int max_model_len,
                        const Detokenizer& detokenize);

}  // namespace minivllm
