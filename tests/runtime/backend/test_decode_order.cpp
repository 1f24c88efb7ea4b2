// DecodeOrder: the decode kernel's sequence order, longest context first by 64-token buckets,
// batch order within a bucket, and the total context it sums on the way. Plain C++: runs without a GPU.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/decode_order.hpp"

namespace minivllm::cuda {
namespace {

// The order of lens, checking the total context longest_first returns with it.
std::vector<std::int32_t> order_of(DecodeOrder& order, const std::vector<std::int32_t>& lens) {
  std::vector<std::int32_t> out(lens.size(), -1);
  EXPECT_EQ(order.longest_first(lens, out.data()),
            std::accumulate(lens.begin(), lens.end(), std::int64_t{0}));
  return out;
}

TEST(DecodeOrder, LongestBucketFirstThenBatchOrder) {
  DecodeOrder order;
  EXPECT_EQ(order_of(order, {1, 64, 63, 200, 128, 0, 127}),
            (std::vector<std::int32_t>{3, 4, 1, 6, 0, 2, 5}));
  EXPECT_EQ(order_of(order, {5, 5, 5}), (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_TRUE(order_of(order, {}).empty());
}

TEST(DecodeOrder, RandomBatchesArePermutationsSortedByBucket) {
  DecodeOrder order;  // reused across batches, as the uploader does
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    std::vector<std::int32_t> lens(std::uniform_int_distribution<std::size_t>(0, 300)(rng));
    const std::int32_t longest = round % 2 == 0 ? 4096 : 40000;
    std::uniform_int_distribution<std::int32_t> length(1, longest);
    for (std::int32_t& len : lens) len = length(rng);
    const std::vector<std::int32_t> got = order_of(order, lens);
    std::vector<std::int32_t> sorted = got;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int32_t> identity(lens.size());
    std::iota(identity.begin(), identity.end(), 0);
    ASSERT_EQ(sorted, identity) << "not a permutation";
    for (std::size_t i = 1; i < got.size(); ++i) {
      const std::int32_t a = lens[got[i - 1]] / 64, b = lens[got[i]] / 64;
      ASSERT_GE(a, b) << "position " << i;
      if (a == b) {
        ASSERT_LT(got[i - 1], got[i]) << "position " << i;
      }
    }
  }
}

}  // namespace
}  // namespace minivllm::cuda
