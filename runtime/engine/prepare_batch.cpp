#include "engine/prepare_batch.hpp"

#include <algorithm>

namespace minivllm {

namespace {

std::size_t max_blocks_of(const StepPlan& plan) {
  std::size_t max_blocks = 0;
  for (const ScheduledSequence& s : plan.seqs)
    max_blocks = std::max(max_blocks, s.seq->block_ids.size());
  return max_blocks;
}

}  // namespace

void prepare_batch(const StepPlan& plan, int block_size, Batch& batch) {
  const auto num_tokens = static_cast<std::size_t>(plan.num_batched_tokens);
  const std::size_t num_seqs = plan.seqs.size();
  const std::size_t max_blocks = max_blocks_of(plan);
  batch.token_ids.resize(num_tokens);
  batch.positions.resize(num_tokens);
  batch.slot_mapping.resize(num_tokens);
  batch.query_start.resize(num_seqs + 1);
  batch.context_lens.resize(num_seqs);
  batch.block_tables.resize(num_seqs * max_blocks);
  batch.max_blocks_per_seq = static_cast<std::int32_t>(max_blocks);
  batch.logits_rows.resize(num_tokens);  // at most one per token; cut to size below

  // Through raw pointers: the stores then need no capacity checks, and each row of the block
  // tables is written once (its blocks, then -1 padding).
  std::int32_t* token_ids = batch.token_ids.data();
  std::int32_t* positions = batch.positions.data();
  std::int64_t* slot_mapping = batch.slot_mapping.data();
  std::int32_t* query_start = batch.query_start.data();
  std::int32_t* context_lens = batch.context_lens.data();
  std::int32_t* block_table = batch.block_tables.data();
  std::int32_t* logits_rows = batch.logits_rows.data();
  std::int32_t t = 0;
  for (std::size_t i = 0; i < num_seqs; ++i, block_table += max_blocks) {
    const ScheduledSequence& s = plan.seqs[i];
    const Sequence& seq = *s.seq;
    query_start[i] = t;
    context_lens[i] = s.start + s.num_new_tokens;
    const std::int32_t* blocks = seq.block_ids.data();
    for (std::int32_t pos = s.start; pos < s.start + s.num_new_tokens; ++pos, ++t) {
      token_ids[t] = seq.token(pos);  // a decode's from the sequence's first line
      positions[t] = pos;
      slot_mapping[t] =
          static_cast<std::int64_t>(blocks[pos / block_size]) * block_size + pos % block_size;
    }
    std::fill(std::copy(blocks, blocks + seq.block_ids.size(), block_table),
              block_table + max_blocks, -1);
    for (std::int32_t r = t - logits_rows_of(s); r < t; ++r) *logits_rows++ = r;
  }
  query_start[num_seqs] = t;
  batch.logits_rows.resize(static_cast<std::size_t>(logits_rows - batch.logits_rows.data()));
}

}  // namespace minivllm
