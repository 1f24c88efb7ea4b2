#include "engine/decode_continuation.hpp"

#include <algorithm>

namespace minivllm {

namespace {

bool samples_one_token(const ScheduledSequence& s) {
  return s.num_new_tokens == 1 && s.sample && !s.prompt_logits;
}

}  // namespace

bool describe_continuation(const StepPlan& previous, const StepPlan& next, int block_size,
                           DecodeContinuation& out) {
  out.removed_rows.clear();
  out.grown_rows.clear();
  out.grown_blocks.clear();
  out.block_size = block_size;
  std::size_t i = 0;  // previous's row
  for (std::size_t j = 0; j < next.seqs.size(); ++j, ++i) {
    const ScheduledSequence& s = next.seqs[j];
    if (!samples_one_token(s)) return false;
    while (i < previous.seqs.size() && previous.seqs[i].seq != s.seq)
      out.removed_rows.push_back(static_cast<std::int32_t>(i++));
    if (i == previous.seqs.size()) return false;
    const ScheduledSequence& p = previous.seqs[i];
    if (!samples_one_token(p) || s.start != p.start + 1) return false;
    // Its new position opens a block: the scheduler allocated it for this step (allocation is
    // exact, so the previous batch's table ends just before it).
    if (s.start % block_size == 0) {
      out.grown_rows.push_back(static_cast<std::int32_t>(j));
      out.grown_blocks.push_back(s.seq->block_ids[s.start / block_size]);
    }
  }
  for (; i < previous.seqs.size(); ++i) out.removed_rows.push_back(static_cast<std::int32_t>(i));
  return true;
}

void continue_batch(const Batch& previous, const DecodeContinuation& c, Batch& next) {
  const auto previous_rows = static_cast<std::int32_t>(previous.positions.size());
  const auto rows = previous_rows - static_cast<std::int32_t>(c.removed_rows.size());
  const std::int32_t block_size = c.block_size;
  const std::int32_t previous_width = previous.max_blocks_per_seq;
  // A row's table holds exactly the blocks of its positions so far.
  std::int32_t width = 0;
  for_each_kept_row(previous_rows, c, [&](std::int32_t r, std::int32_t) {
    width = std::max(width, (previous.positions[r] + 1) / block_size + 1);
  });
  next.token_ids.assign(rows, -1);
  next.positions.resize(rows);
  next.slot_mapping.resize(rows);
  next.query_start.resize(rows + 1);
  next.context_lens.resize(rows);
  next.block_tables.resize(static_cast<std::size_t>(rows) * width);
  next.max_blocks_per_seq = width;
  next.logits_rows.resize(rows);

  const std::int32_t copied = std::min(previous_width, width);
  std::size_t grown = 0;
  for_each_kept_row(previous_rows, c, [&](std::int32_t r, std::int32_t j) {
    const std::int32_t pos = previous.positions[r] + 1;
    next.positions[j] = pos;
    next.context_lens[j] = pos + 1;
    next.query_start[j] = j;
    next.logits_rows[j] = j;
    const std::int32_t* from =
        previous.block_tables.data() + static_cast<std::size_t>(r) * previous_width;
    std::int32_t* table = next.block_tables.data() + static_cast<std::size_t>(j) * width;
    std::fill(std::copy(from, from + copied, table), table + width, -1);
    if (grown < c.grown_rows.size() && c.grown_rows[grown] == j)
      table[pos / block_size] = c.grown_blocks[grown++];
    next.slot_mapping[j] =
        static_cast<std::int64_t>(table[pos / block_size]) * block_size + pos % block_size;
  });
  next.query_start[rows] = rows;
}

}  // namespace minivllm
