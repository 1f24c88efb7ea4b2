#include "model/batch_builder.hpp"

#include <algorithm>
#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

BatchBuilder::BatchBuilder(std::int32_t block_size) : block_size_(block_size) {
  if (block_size < 1) throw Error("BatchBuilder: block size must be positive");
  batch_.query_start.push_back(0);
}

void BatchBuilder::add(std::span<const std::int32_t> new_tokens, std::int32_t num_cached,
                       std::span<const std::int32_t> block_table, LogitsFor logits) {
  const auto count = static_cast<std::int32_t>(new_tokens.size());
  const std::int32_t context_len = num_cached + count;
  const std::int64_t blocks_needed = (context_len + block_size_ - 1) / block_size_;
  if (count == 0 || num_cached < 0)
    throw Error("BatchBuilder: a sequence needs at least one new token");
  if (static_cast<std::int64_t>(block_table.size()) < blocks_needed)
    throw Error("BatchBuilder: " + std::to_string(context_len) + " tokens need " +
                std::to_string(blocks_needed) + " blocks, the block table has " +
                std::to_string(block_table.size()));

  const std::int32_t first_row = batch_.num_tokens();
  for (std::int32_t i = 0; i < count; ++i) {
    const std::int32_t position = num_cached + i;
    batch_.token_ids.push_back(new_tokens[static_cast<std::size_t>(i)]);
    batch_.positions.push_back(position);
    batch_.slot_mapping.push_back(
        static_cast<std::int64_t>(block_table[static_cast<std::size_t>(position / block_size_)]) *
            block_size_ + position % block_size_);
  }
  if (logits == LogitsFor::last) batch_.logits_rows.push_back(first_row + count - 1);
  if (logits == LogitsFor::all)
    for (std::int32_t i = 0; i < count; ++i) batch_.logits_rows.push_back(first_row + i);
  batch_.query_start.push_back(first_row + count);
  batch_.context_lens.push_back(context_len);
  tables_.emplace_back(block_table.begin(), block_table.begin() + blocks_needed);
}

Batch BatchBuilder::build() {
  std::size_t width = 0;
  for (const auto& t : tables_) width = std::max(width, t.size());
  batch_.max_blocks_per_seq = static_cast<std::int32_t>(width);
  batch_.block_tables.assign(tables_.size() * width, -1);
  for (std::size_t s = 0; s < tables_.size(); ++s)
    std::copy(tables_[s].begin(), tables_[s].end(), batch_.block_tables.begin() + s * width);
  Batch out = std::move(batch_);
  batch_ = Batch{};
  batch_.query_start.push_back(0);
  tables_.clear();
  return out;
}

}  // namespace minivllm
