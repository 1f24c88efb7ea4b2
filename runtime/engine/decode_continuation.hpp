#pragma once
// A look-ahead decode step told as a change of the decode step before it, so that the scheduler
// does not refill a whole batch for it: which of the previous step's rows leave, and the cache
// blocks the others gain. Every other row decodes the position after the one it decoded in the
// previous step. The worker, which kept the previous batch, builds the new one from it
// (continue_batch) as prepare_batch would have; the scheduler's turn skips prepare_batch.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/step_plan.hpp"

namespace minivllm {

struct DecodeContinuation {
  std::vector<std::int32_t> removed_rows;  // rows of the previous batch, ascending
  std::vector<std::int32_t> grown_rows;    // rows of the new batch that gain a block, ascending
  std::vector<std::int32_t> grown_blocks;  // the block each gains, appended to its table
  std::int32_t block_size = 0;
};

// Calls keep(r, j) for every row r of the previous step's `previous_rows` that stays, j being
// its row in the new step.
template <class Keep>
void for_each_kept_row(std::int32_t previous_rows, const DecodeContinuation& c, Keep keep) {
  std::size_t removed = 0;
  for (std::int32_t r = 0, j = 0; r < previous_rows; ++r) {
    if (removed < c.removed_rows.size() && c.removed_rows[removed] == r) ++removed;
    else keep(r, j++);
  }
}

// Whether `next` continues `previous`: both are one-token decodes that sample (no prompt logits)
// on every row, and next's sequences are previous's in order, some left out, each one position
// further on. If so, fills `out` (its vectors keep their capacity).
bool describe_continuation(const StepPlan& previous, const StepPlan& next, int block_size,
                           DecodeContinuation& out);

// The batch of the step `continuation` describes, from the previous step's batch (a one-token
// decode on every row, as prepare_batch made it), into `next` (its vectors keep their capacity).
// Token ids are -1: placeholders for the tokens the previous step samples.
void continue_batch(const Batch& previous, const DecodeContinuation& continuation, Batch& next);

}  // namespace minivllm
