#include "engine/prepare_batch.hpp"

#include <algorithm>

namespace minivllm {

void prepare_batch(const StepPlan& plan, int block_size, Batch& batch) {
  const auto num_tokens = static_cast<std::size_t>(plan.num_batched_tokens);
  batch.token_ids.resize(num_tokens);
  batch.positions.resize(num_tokens);
  batch.slot_mapping.resize(num_tokens);
  batch.query_start.resize(plan.seqs.size() + 1);
  batch.context_lens.resize(plan.seqs.size());
  batch.logits_rows.clear();

  std::size_t max_blocks = 0;
  for (const ScheduledSequence& s : plan.seqs)
    max_blocks = std::max(max_blocks, s.seq->block_ids.size());
  batch.max_blocks_per_seq = static_cast<std::int32_t>(max_blocks);
  batch.block_tables.assign(plan.seqs.size() * max_blocks, -1);

  std::int32_t t = 0;
  for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    const Sequence& seq = *s.seq;
    batch.query_start[i] = t;
    batch.context_lens[i] = s.start + s.num_new_tokens;
    const std::int32_t* tokens = seq.token_ids().data();
    const std::int32_t* blocks = seq.block_ids.data();
    for (std::int32_t pos = s.start; pos < s.start + s.num_new_tokens; ++pos, ++t) {
      batch.token_ids[t] = tokens[pos];
      batch.positions[t] = pos;
      batch.slot_mapping[t] =
          static_cast<std::int64_t>(blocks[pos / block_size]) * block_size + pos % block_size;
    }
    std::copy(seq.block_ids.begin(), seq.block_ids.end(),
              batch.block_tables.begin() + static_cast<std::ptrdiff_t>(i * max_blocks));
    const int rows = logits_rows_of(s);
    for (std::int32_t r = t - rows; r < t; ++r) batch.logits_rows.push_back(r);
  }
  batch.query_start[plan.seqs.size()] = t;
}

}  // namespace minivllm
