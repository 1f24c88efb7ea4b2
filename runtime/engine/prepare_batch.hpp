#pragma once
// Turns a StepPlan into the model's Batch: flattened token ids and positions, slot mapping,
// query ranges, context lengths, padded block tables, and which rows need logits.
#include <minivllm/batch.hpp>

#include "engine/step_plan.hpp"

namespace minivllm {

// Logits rows per scheduled sequence, in plan order: every new position when it wants prompt
// logits, else its last position when it samples, else none.
inline int logits_rows_of(const ScheduledSequence& s) {
  return s.prompt_logits ? s.num_new_tokens : (s.sample ? 1 : 0);
}

// Refills `batch` (its vectors keep their capacity from step to step).
void prepare_batch(const StepPlan& plan, int block_size, Batch& batch);

}  // namespace minivllm
