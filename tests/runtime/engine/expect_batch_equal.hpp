#pragma once
// Two Batches equal array by array (gtest expectations, one per array).
#include <gtest/gtest.h>

#include <minivllm/batch.hpp>

namespace minivllm::testing {

inline void expect_batch_equal(const Batch& got, const Batch& want) {
  EXPECT_EQ(got.token_ids, want.token_ids);
  EXPECT_EQ(got.positions, want.positions);
  EXPECT_EQ(got.slot_mapping, want.slot_mapping);
  EXPECT_EQ(got.query_start, want.query_start);
  EXPECT_EQ(got.context_lens, want.context_lens);
  EXPECT_EQ(got.max_blocks_per_seq, want.max_blocks_per_seq);
  EXPECT_EQ(got.block_tables, want.block_tables);
  EXPECT_EQ(got.logits_rows, want.logits_rows);
}

}  // namespace minivllm::testing
