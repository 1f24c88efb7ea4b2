#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/block_manager.hpp"

namespace minivllm {
namespace {

constexpr int kBlockSize = 4;

std::unique_ptr<Sequence> make_seq(SeqId id, std::vector<std::int32_t> tokens) {
  return std::make_unique<Sequence>(id, "r" + std::to_string(id), 0, std::move(tokens),
                                    std::make_shared<const SamplingParams>(), 0);
}

std::vector<std::int32_t> iota_tokens(int n, int first = 100) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Computes all of seq's tokens (a whole prefill) and offers its full blocks to the cache.
void prefill(BlockManager& bm, Sequence& seq) {
  const auto cached = bm.match_prefix(seq);
  seq.num_computed_tokens = static_cast<int>(cached.size()) * kBlockSize;
  ASSERT_TRUE(bm.allocate(seq, seq.num_tokens() - seq.num_computed_tokens, cached));
  seq.num_computed_tokens = seq.num_tokens();
  bm.register_full_blocks(seq);
}

std::string check(const BlockManager& bm, std::initializer_list<const Sequence*> holders) {
  std::vector<const Sequence*> v(holders);
  return bm.check_invariants(v);
}

TEST(BlockManager, AllocatesWholeBlocksAndFreesThem) {
  BlockManager bm(8, kBlockSize, false);
  auto a = make_seq(1, iota_tokens(10));
  ASSERT_TRUE(bm.allocate(*a, 10));
  EXPECT_EQ(a->block_ids.size(), 3u);
  EXPECT_EQ(bm.num_free_blocks(), 5);
  EXPECT_EQ(check(bm, {a.get()}), "");
  bm.free(*a);
  EXPECT_TRUE(a->block_ids.empty());
  EXPECT_EQ(bm.num_free_blocks(), 8);
  EXPECT_EQ(check(bm, {}), "");
}

TEST(BlockManager, DecodeTakesANewBlockOnlyAtABoundary) {
  BlockManager bm(8, kBlockSize, false);
  auto a = make_seq(1, iota_tokens(7));
  ASSERT_TRUE(bm.allocate(*a, 7));
  a->num_computed_tokens = 7;
  ASSERT_TRUE(bm.allocate(*a, 1));  // position 7 still fits block 1
  EXPECT_EQ(a->block_ids.size(), 2u);
  a->num_computed_tokens = 8;
  ASSERT_TRUE(bm.allocate(*a, 1));  // position 8 opens block 2
  EXPECT_EQ(a->block_ids.size(), 3u);
  EXPECT_EQ(check(bm, {a.get()}), "");
}

TEST(BlockManager, RefusesWhenShortAndChangesNothing) {
  BlockManager bm(4, kBlockSize, false);
  auto a = make_seq(1, iota_tokens(12));
  auto b = make_seq(2, iota_tokens(8));
  ASSERT_TRUE(bm.allocate(*a, 12));
  EXPECT_FALSE(bm.allocate(*b, 8));
  EXPECT_TRUE(b->block_ids.empty());
  EXPECT_EQ(bm.num_free_blocks(), 1);
  EXPECT_EQ(check(bm, {a.get(), b.get()}), "");
}

TEST(BlockManager, SharedPrefixReusesFullBlocksAndCounts) {
  BlockManager bm(16, kBlockSize, true);
  auto a = make_seq(1, iota_tokens(10));
  prefill(bm, *a);
  std::vector<std::int32_t> tokens = iota_tokens(8);
  tokens.insert(tokens.end(), {7, 7, 7});
  auto b = make_seq(2, tokens);
  const auto cached = bm.match_prefix(*b);
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(cached[0], a->block_ids[0]);
  EXPECT_EQ(cached[1], a->block_ids[1]);
  b->num_computed_tokens = 8;
  ASSERT_TRUE(bm.allocate(*b, 3, cached));
  EXPECT_EQ(b->block_ids.size(), 3u);
  EXPECT_NE(b->block_ids[2], a->block_ids[2]);
  EXPECT_EQ(check(bm, {a.get(), b.get()}), "");
  EXPECT_EQ(bm.prefix_cache_queries(), 10u + 11u);
  EXPECT_EQ(bm.prefix_cache_hits(), 8u);
  bm.free(*a);
  bm.free(*b);
  EXPECT_EQ(bm.num_free_blocks(), 16);
  EXPECT_EQ(check(bm, {}), "");
}

TEST(BlockManager, LastTokenIsAlwaysRecomputed) {
  BlockManager bm(16, kBlockSize, true);
  auto a = make_seq(1, iota_tokens(8));
  prefill(bm, *a);
  auto same = make_seq(2, iota_tokens(8));
  EXPECT_EQ(bm.match_prefix(*same).size(), 1u);  // 2 full blocks cached, the last token is not
  auto longer = make_seq(3, iota_tokens(9));
  EXPECT_EQ(bm.match_prefix(*longer).size(), 2u);
}

TEST(BlockManager, HashIsChainedOverThePrefix) {
  BlockManager bm(16, kBlockSize, true);
  auto a = make_seq(1, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  prefill(bm, *a);
  // Block 1 has a's tokens but follows a different block: no match.
  auto b = make_seq(2, {9, 9, 9, 9, 5, 6, 7, 8, 9});
  EXPECT_TRUE(bm.match_prefix(*b).empty());
}

TEST(BlockManager, ReleasedBlocksStayCachedUntilEvictedLeastRecentlyUsedFirst) {
  BlockManager bm(6, kBlockSize, true);
  auto a = make_seq(1, iota_tokens(9, 100));  // blocks a0 a1 cached, a2 partial
  auto b = make_seq(2, iota_tokens(9, 200));
  prefill(bm, *a);
  bm.free(*a);  // a released first: least recently used
  prefill(bm, *b);
  bm.free(*b);
  EXPECT_EQ(check(bm, {}), "");
  EXPECT_EQ(bm.match_prefix(*make_seq(3, iota_tokens(9, 100))).size(), 2u);
  EXPECT_EQ(bm.match_prefix(*make_seq(4, iota_tokens(9, 200))).size(), 2u);

  // Needs 3 blocks: the 2 unhashed partial blocks go first, then a's tail block a1.
  auto c = make_seq(5, iota_tokens(12, 300));
  ASSERT_TRUE(bm.allocate(*c, 12));
  EXPECT_EQ(bm.match_prefix(*make_seq(6, iota_tokens(9, 100))).size(), 1u);
  EXPECT_EQ(bm.match_prefix(*make_seq(7, iota_tokens(9, 200))).size(), 2u);
  EXPECT_EQ(check(bm, {c.get()}), "");
}

TEST(BlockManager, HitOnAReleasedBlockTakesItOutOfTheFreePool) {
  BlockManager bm(4, kBlockSize, true);
  auto a = make_seq(1, iota_tokens(9));
  prefill(bm, *a);
  bm.free(*a);
  auto b = make_seq(2, iota_tokens(9));
  const auto cached = bm.match_prefix(*b);
  ASSERT_EQ(cached.size(), 2u);
  b->num_computed_tokens = 8;
  ASSERT_TRUE(bm.allocate(*b, 1, cached));
  EXPECT_EQ(bm.num_free_blocks(), 1);
  EXPECT_EQ(check(bm, {b.get()}), "");
}

TEST(BlockManager, NoMatchesWithPrefixCachingOff) {
  BlockManager bm(16, kBlockSize, false);
  auto a = make_seq(1, iota_tokens(9));
  prefill(bm, *a);
  EXPECT_TRUE(bm.match_prefix(*make_seq(2, iota_tokens(9))).empty());
  EXPECT_EQ(bm.prefix_cache_queries(), 0u);
}

TEST(BlockManager, InvariantCheckCatchesAMissingHolder) {
  BlockManager bm(8, kBlockSize, false);
  auto a = make_seq(1, iota_tokens(5));
  ASSERT_TRUE(bm.allocate(*a, 5));
  EXPECT_NE(check(bm, {}).find("holders"), std::string::npos);
  EXPECT_NE(check(bm, {a.get(), a.get()}), "");
}

}  // namespace
}  // namespace minivllm
