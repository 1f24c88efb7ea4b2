#pragma once
// What the scheduler decided for one step: which sequences compute how many tokens.
#include <cstdint>
#include <vector>

#include "engine/sequence.hpp"

namespace minivllm {

struct ScheduledSequence {
  Sequence* seq = nullptr;
  int start = 0;           // first position computed (tokens before it are in the cache)
  int num_new_tokens = 0;  // positions start .. start + num_new_tokens - 1
  bool sample = false;     // reaches the sequence's last token: the step yields its next token
  bool prompt_logits = false;  // wants logits at every position (prompt_logprobs)
};

struct StepPlan {
  std::uint64_t step = 0;
  std::vector<ScheduledSequence> seqs;  // decodes first, then prefills (chunks)
  int num_batched_tokens = 0;
  std::vector<Sequence*> preempted;  // sent back to waiting this step, to be recomputed

  bool empty() const { return seqs.empty(); }
};

}  // namespace minivllm
