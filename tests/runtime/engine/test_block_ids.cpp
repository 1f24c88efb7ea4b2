// BlockIds keeps a sequence's first kInline block ids in place and moves them all to the heap
// when more come (or room for more is reserved): the ids, in order, must survive every move.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "engine/block_ids.hpp"

namespace minivllm {
namespace {

std::vector<std::int32_t> ids_of(const BlockIds& ids) { return {ids.begin(), ids.end()}; }

TEST(BlockIds, StartsEmptyAndInPlace) {
  BlockIds ids;
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(ids.size(), 0u);
  EXPECT_TRUE(ids.is_inline());
  EXPECT_EQ(ids.capacity(), static_cast<std::size_t>(BlockIds::kInline));
}

TEST(BlockIds, GrowsPastItsInlineCapacityKeepingTheIdsInOrder) {
  BlockIds ids;
  std::vector<std::int32_t> want;
  for (std::int32_t b = 0; b < 5 * BlockIds::kInline + 3; ++b) {
    ids.push_back(1000 - b);
    want.push_back(1000 - b);
    EXPECT_EQ(ids.is_inline(), want.size() <= static_cast<std::size_t>(BlockIds::kInline));
    ASSERT_EQ(ids_of(ids), want) << "after " << want.size() << " ids";
  }
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(ids[i], want[i]);
}

TEST(BlockIds, ReserveMovesThemToTheHeapOnlyPastTheInlineCapacity) {
  BlockIds ids;
  ids.push_back(7);
  ids.push_back(3);
  ids.reserve(BlockIds::kInline);
  EXPECT_TRUE(ids.is_inline());
  ids.reserve(BlockIds::kInline + 1);
  EXPECT_FALSE(ids.is_inline());
  EXPECT_EQ(ids.capacity(), static_cast<std::size_t>(BlockIds::kInline + 1));
  EXPECT_EQ(ids_of(ids), (std::vector<std::int32_t>{7, 3}));
  const std::int32_t* storage = ids.data();
  for (std::int32_t b = 0; b < BlockIds::kInline - 1; ++b) ids.push_back(b);
  EXPECT_EQ(ids.data(), storage);  // within the reserved room: no reallocation
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(BlockIds::kInline + 1));
}

TEST(BlockIds, ClearKeepsTheCapacity) {
  BlockIds ids;
  for (std::int32_t b = 0; b < 2 * BlockIds::kInline; ++b) ids.push_back(b);
  const std::size_t capacity = ids.capacity();
  ids.clear();
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(ids.capacity(), capacity);
  ids.push_back(42);
  EXPECT_EQ(ids_of(ids), (std::vector<std::int32_t>{42}));
}

}  // namespace
}  // namespace minivllm
