// Data-parallel routing: a prompt goes to the replica it sent its longest prefix to, even when
// that replica is busier; without such a prefix, to the least loaded replica; an ended request
// leaves its replica's load; a replica past its remembered blocks forgets them; a replica that is
// not serving takes nothing while another serves.
#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "engine/replica_router.hpp"

namespace minivllm {
namespace {

std::vector<std::int32_t> tokens(std::int32_t first, std::size_t n) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = first + static_cast<std::int32_t>(i);
  return t;
}

std::vector<std::int32_t> join(std::vector<std::int32_t> a, const std::vector<std::int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ReplicaRouter, ThePromptsPrefixBeatsTheLoad) {
  ReplicaRouter router(2, 4, 1000);
  const auto prefix = tokens(100, 8);  // two full blocks
  EXPECT_EQ(router.route("a", join(prefix, {1})), 0u);  // all idle: the lowest index
  EXPECT_EQ(router.route("b", tokens(500, 9)), 1u);     // no prefix anywhere: the idler one
  EXPECT_EQ(router.route("c", tokens(600, 9)), 0u);     // loads 1 and 1: the lowest index
  // Replica 0 is busier (2 against 1), but holds the prefix.
  EXPECT_EQ(router.route("d", join(prefix, {2, 3})), 0u);
  EXPECT_EQ(router.load(0), 3u);
  EXPECT_EQ(router.load(1), 1u);
  // The longer held prefix wins: b's first block and more than prefix's.
  const auto b_prefix = tokens(500, 8);
  EXPECT_EQ(router.route("e", join(b_prefix, {7})), 1u);
  // A partial block matches nothing: a 3-token prompt has no full block.
  EXPECT_EQ(router.route("f", tokens(100, 3)), 1u);  // loads 3 and 2 -> 3 and 3 after
}

TEST(ReplicaRouter, AReplicaNotServingTakesNothingWhileAnotherServes) {
  ReplicaRouter router(3, 4, 1000);
  const auto prefix = tokens(100, 8);
  EXPECT_EQ(router.route("a", join(prefix, {1})), 0u);
  router.set_serving(0, false);
  // Replica 0 holds the prefix and replica 1 is the lowest idle index: neither counts for 0.
  EXPECT_EQ(router.route("b", join(prefix, {2})), 1u);
  EXPECT_EQ(router.route("c", tokens(500, 9)), 2u);  // 1 and 2 serve; 2 is idler
  router.set_serving(1, false);
  router.set_serving(2, false);
  // None serves: the usual choice (the prefix's replica), whose scheduler says why it cannot.
  EXPECT_EQ(router.route("d", join(prefix, {3})), 0u);
  router.set_serving(1, true);
  EXPECT_EQ(router.route("e", join(prefix, {4})), 1u);  // b sent the prefix there too
  router.set_serving(0, true);
  EXPECT_EQ(router.route("f", tokens(900, 9)), 0u);  // loads 2, 2 and 1 not serving
  router.set_serving(2, true);
  EXPECT_EQ(router.route("g", tokens(950, 9)), 2u);  // loads 3, 2, 1
  EXPECT_THROW(router.set_serving(3, true), std::out_of_range);
}

TEST(ReplicaRouter, AnEndedRequestLeavesItsReplicasLoad) {
  ReplicaRouter router(3, 4, 1000);
  EXPECT_EQ(router.route("a", tokens(0, 2)), 0u);
  EXPECT_EQ(router.route("b", tokens(10, 2)), 1u);
  EXPECT_EQ(router.replica_of("b"), 1u);
  router.ended("a");
  router.ended("a");        // twice: ignored
  router.ended("unknown");  // ignored
  EXPECT_EQ(router.load(0), 0u);
  EXPECT_EQ(router.replica_of("a"), 3u);  // no longer running: replicas()
  EXPECT_EQ(router.route("c", tokens(20, 2)), 0u);
}

TEST(ReplicaRouter, AReplicaPastItsBoundForgetsWhatItHeld) {
  ReplicaRouter router(2, 2, 3);  // three blocks remembered per replica
  const auto p = tokens(0, 4);    // two blocks
  EXPECT_EQ(router.route("a", p), 0u);
  router.ended("a");
  EXPECT_EQ(router.route("b", tokens(50, 4)), 0u);  // idle tie: 0, which now forgets p's blocks
  // Replica 0 is busier (b runs): p, forgotten there, goes to the idle replica.
  EXPECT_EQ(router.route("c", p), 1u);
}

TEST(ReplicaRouter, OneReplicaTakesEverything) {
  ReplicaRouter router(1, 16, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(router.route(std::to_string(i), tokens(i, 40)), 0u);
  EXPECT_EQ(router.load(0), 5u);
  EXPECT_THROW(ReplicaRouter(0, 16, 10), Error);
}

}  // namespace
}  // namespace minivllm
