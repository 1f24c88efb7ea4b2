#pragma once
// What the scheduler decided for one step: which sequences compute how many tokens.
#include <cstdint>
#include <vector>

#include "engine/sequence.hpp"

namespace minivllm {

// The most tokens one sequence can compute in a step (ScheduledSequence::num_new_tokens' bits);
// a step's token budget stays within it (SchedulerConfig::validate).
inline constexpr int kMaxStepTokens = (1 << 29) - 1;

// 16 bytes: a step's plan is read and written whole every turn (hundreds of sequences), so a
// third fewer cache lines than with plain ints and bools.
struct ScheduledSequence {
  Sequence* seq = nullptr;
  std::int32_t start = 0;  // first position computed (tokens before it are in the cache)
  std::int32_t num_new_tokens : 30 = 0;  // positions start .. start + num_new_tokens - 1
  bool sample : 1 = false;  // reaches the sequence's last token: the step yields its next token
  bool prompt_logits : 1 = false;  // wants logits at every position (prompt_logprobs)
};
static_assert(sizeof(ScheduledSequence) == 16);

struct StepPlan {
  std::uint64_t step = 0;
  std::vector<ScheduledSequence> seqs;  // decodes first, then prefills (chunks)
  int num_batched_tokens = 0;
  std::vector<Sequence*> preempted;  // sent back to waiting this step, to be recomputed

  bool empty() const { return seqs.empty(); }
};

}  // namespace minivllm
