#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "model/batch_builder.hpp"

namespace minivllm {
namespace {

TEST(BatchBuilder, DerivesPositionsSlotsAndQueryRanges) {
  BatchBuilder builder(4);
  const std::vector<std::int32_t> prompt{11, 12, 13}, decode{99};
  const std::vector<std::int32_t> table_a{7, 2}, table_b{5, 0, 3};
  builder.add(prompt, 2, table_a, LogitsFor::all);  // positions 2..4: blocks 7, 7, 2
  builder.add(decode, 8, table_b);                  // position 8: block 3, offset 0
  const Batch b = builder.build();
  EXPECT_EQ(b.token_ids, (std::vector<std::int32_t>{11, 12, 13, 99}));
  EXPECT_EQ(b.positions, (std::vector<std::int32_t>{2, 3, 4, 8}));
  EXPECT_EQ(b.slot_mapping, (std::vector<std::int64_t>{30, 31, 8, 12}));
  EXPECT_EQ(b.query_start, (std::vector<std::int32_t>{0, 3, 4}));
  EXPECT_EQ(b.context_lens, (std::vector<std::int32_t>{5, 9}));
  EXPECT_EQ(b.max_blocks_per_seq, 3);
  EXPECT_EQ(b.block_tables, (std::vector<std::int32_t>{7, 2, -1, 5, 0, 3}));
  EXPECT_EQ(b.logits_rows, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(b.num_seqs(), 2);
  EXPECT_EQ(builder.build().num_seqs(), 0);  // reset after build
}

TEST(BatchBuilder, RejectsAShortBlockTable) {
  BatchBuilder builder(4);
  const std::vector<std::int32_t> tokens{1, 2}, table{0};
  EXPECT_THROW(builder.add(tokens, 3, table), Error);  // 5 tokens need 2 blocks
}

}  // namespace
}  // namespace minivllm
