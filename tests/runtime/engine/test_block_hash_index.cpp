#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "engine/block_hash_index.hpp"

namespace minivllm {
namespace {

TEST(BlockHashIndex, FindsWhatWasInsertedAndNothingElse) {
  BlockHashIndex index(4);
  EXPECT_EQ(index.find(7), -1);
  EXPECT_TRUE(index.insert(7, 3));
  EXPECT_FALSE(index.insert(7, 5));  // the first block keeps the hash
  EXPECT_EQ(index.find(7), 3);
  EXPECT_EQ(index.find(8), -1);
  EXPECT_EQ(index.size(), 1u);
}

TEST(BlockHashIndex, ErasingKeepsCollidingEntriesReachable) {
  BlockHashIndex index(4);  // 16 slots: hashes equal modulo 16 share a home slot
  for (std::int32_t b = 0; b < 4; ++b) ASSERT_TRUE(index.insert(5 + 16 * b, b));
  ASSERT_TRUE(index.insert(6, 9));  // its home is taken: probed past the chain
  index.erase(5 + 16);
  EXPECT_EQ(index.find(5 + 16), -1);
  EXPECT_EQ(index.find(5), 0);
  EXPECT_EQ(index.find(5 + 32), 2);
  EXPECT_EQ(index.find(5 + 48), 3);
  EXPECT_EQ(index.find(6), 9);
  EXPECT_EQ(index.size(), 4u);
}

TEST(BlockHashIndex, ErasingAtTheEndWrapsAround) {
  BlockHashIndex index(4);  // 16 slots
  ASSERT_TRUE(index.insert(15, 1));
  ASSERT_TRUE(index.insert(31, 2));  // home 15 is taken: slot 0
  ASSERT_TRUE(index.insert(0, 3));   // home 0 is taken: slot 1
  index.erase(15);
  EXPECT_EQ(index.find(31), 2);
  EXPECT_EQ(index.find(0), 3);
  index.erase(31);
  EXPECT_EQ(index.find(0), 3);
  EXPECT_EQ(index.size(), 1u);
}

TEST(BlockHashIndex, AgreesWithAMapUnderRandomInsertsAndErases) {
  constexpr int kMaxEntries = 64;
  BlockHashIndex index(kMaxEntries);
  std::map<std::uint64_t, std::int32_t> expected;
  std::mt19937_64 rng(1);
  for (int step = 0; step < 20000; ++step) {
    const std::uint64_t hash = rng() % 512;  // few distinct low bits: many collisions
    if (expected.count(hash) != 0 && rng() % 2 == 0) {
      index.erase(hash);
      expected.erase(hash);
    } else if (expected.size() < kMaxEntries) {
      const auto block = static_cast<std::int32_t>(step % 1000);
      EXPECT_EQ(index.insert(hash, block), expected.try_emplace(hash, block).second);
    }
    ASSERT_EQ(index.size(), expected.size());
  }
  for (std::uint64_t hash = 0; hash < 512; ++hash) {
    const auto it = expected.find(hash);
    EXPECT_EQ(index.find(hash), it == expected.end() ? -1 : it->second) << hash;
  }
}

}  // namespace
}  // namespace minivllm
