// NextWeights: the weight a forward read after a given one, learned from the forward before.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "backend/next_weights.hpp"

namespace minivllm {
namespace {

// A host tensor that owns n floats.
Tensor owned(std::int64_t n) {
  auto memory = std::shared_ptr<void>(new float[static_cast<std::size_t>(n)],
                                      [](void* p) { delete[] static_cast<float*>(p); });
  void* data = memory.get();
  return {std::move(memory), data, DType::f32, {n}, Device::cpu};
}

constexpr std::size_t kAny = ~std::size_t{0};

TEST(NextWeights, NamesTheWeightReadAfterThisOneInTheForwardBefore) {
  const std::vector<Tensor> layer = {owned(4), owned(8), owned(16), owned(2)};
  NextWeights next;
  for (const Tensor& w : layer) EXPECT_EQ(next.read(w, kAny).data, nullptr);  // nothing known yet
  for (std::size_t i = 0; i < layer.size(); ++i) {
    const NextWeights::Region region = next.read(layer[i], kAny);
    // The last weight's successor is the first weight of the forward after it.
    const Tensor& after = layer[(i + 1) % layer.size()];
    EXPECT_EQ(region.data, after.data()) << i;
    EXPECT_EQ(region.bytes, after.nbytes()) << i;
  }
}

TEST(NextWeights, FollowsAChangedOrder) {
  const Tensor a = owned(4), b = owned(4), c = owned(4);
  NextWeights next;
  next.read(a, kAny);
  next.read(b, kAny);
  next.read(a, kAny);
  next.read(c, kAny);  // a is now followed by c
  EXPECT_EQ(next.read(a, kAny).data, c.data());
}

TEST(NextWeights, AWeightReadTwiceInARowIsNotItsOwnSuccessor) {
  const Tensor a = owned(4), b = owned(4);
  NextWeights next;
  next.read(a, kAny);
  next.read(b, kAny);
  next.read(a, kAny);
  // The unfused gate/up path reads the same weight through linear again: a stays followed by b.
  EXPECT_EQ(next.read(a, kAny).data, b.data());
}

TEST(NextWeights, NamesNothingOverTheLimitBorrowedOrFreed) {
  const Tensor a = owned(4), big = owned(1024);
  float borrowed_memory[4] = {};
  const Tensor borrowed(nullptr, borrowed_memory, DType::f32, {4}, Device::cpu);
  NextWeights next;
  next.read(a, kAny);
  next.read(big, kAny);
  EXPECT_EQ(next.read(a, kAny).data, big.data());
  EXPECT_EQ(next.read(a, big.nbytes() - 1).data, nullptr);  // over max_bytes
  next.read(borrowed, kAny);
  EXPECT_EQ(next.read(a, kAny).data, nullptr);  // its successor is now a borrowed weight
  {
    const Tensor gone = owned(4);
    next.read(gone, kAny);
  }
  EXPECT_EQ(next.read(a, kAny).data, nullptr);  // freed since
}

}  // namespace
}  // namespace minivllm
