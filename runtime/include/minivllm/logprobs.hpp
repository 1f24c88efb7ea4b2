#pragma once
// Log-probabilities reported per token (generated or prompt), as vLLM reports them: the chosen
// token's log-probability and rank, and the top-k alternatives, from the raw model logits.
#include <cstdint>
#include <vector>

namespace minivllm {

struct Logprob {
  std::int32_t token = 0;
  float logprob = 0.0f;
  int rank = 0;  // 1 = most likely
};

struct PositionLogprobs {
  Logprob chosen;
  std::vector<Logprob> top;  // most likely first
};

}  // namespace minivllm
