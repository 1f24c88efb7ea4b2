#pragma once
// The goldens' greedy continuations as token expectations, shared by the model and engine tests.
#include <cstdint>
#include <string>
#include <vector>

namespace minivllm::testing {

struct GreedyGolden {
  int prompt_index = 0;               // index into the golden's tokenizer[] entries
  std::vector<std::int32_t> prompt;   // prompt token ids
  std::vector<std::int32_t> tokens;   // the expected continuation
  std::vector<double> margins;        // golden top1 - top2 logit at each step

  // The tokens up to the first step whose margin is below `tolerance`: past a near-tie two
  // correct implementations may part ways.
  std::vector<std::int32_t> reliable_tokens(double tolerance) const;
};

// tests/data/golden/<model>.json's greedy[] entries.
std::vector<GreedyGolden> load_greedy_goldens(const std::string& model);

}  // namespace minivllm::testing
