#include <minivllm/step_times.hpp>

#include <gtest/gtest.h>

namespace minivllm {
namespace {

TEST(StepTimes, GroupsStepsByKindAndDecodeRows) {
  StepTimes t;
  t.record(true, 200, 200, 0.008, 0.003, 0.0001);
  t.record(false, 30, 16384, 0.060, 0.002, 0.0002);
  t.record(true, 1, 1, 0.001, 0.0, 0.0);
  t.record(true, 250, 250, 0.010, 0.004, 0.0001);
  const std::size_t small = t.record(true, 5, 5, 0.002, 0.0, 0.0);
  t.add_scheduler_turn(small, {20e-6, 5e-6, 6e-6, 7e-6});
  t.add_scheduler_turn(small, {10e-6, 1e-6, 2e-6, 3e-6});
  ASSERT_EQ(t.buckets.size(), 4u);
  EXPECT_EQ(small, 2u);
  EXPECT_DOUBLE_EQ(t.buckets[2].scheduler.seconds, 30e-6);
  EXPECT_DOUBLE_EQ(t.buckets[2].scheduler.tokens_seconds, 6e-6);
  EXPECT_DOUBLE_EQ(t.buckets[2].scheduler.plan_seconds, 8e-6);
  EXPECT_DOUBLE_EQ(t.buckets[2].scheduler.batch_seconds, 10e-6);
  EXPECT_DOUBLE_EQ(t.scheduler_seconds, 30e-6);
  EXPECT_DOUBLE_EQ(t.buckets[1].scheduler.seconds, 0.0);
  EXPECT_EQ(t.scheduler_steps, 2u);
  EXPECT_FALSE(t.buckets[0].decode);
  EXPECT_EQ(t.buckets[0].tokens, 16384u);
  EXPECT_TRUE(t.buckets[1].decode);
  EXPECT_EQ(t.buckets[1].min_rows, 1);
  EXPECT_EQ(t.buckets[1].max_rows, 1);
  EXPECT_EQ(t.buckets[2].min_rows, 2);
  EXPECT_EQ(t.buckets[2].max_rows, 8);
  EXPECT_EQ(t.buckets[3].min_rows, 129);
  EXPECT_EQ(t.buckets[3].max_rows, 256);
  EXPECT_EQ(t.buckets[3].steps, 2u);
  EXPECT_EQ(t.buckets[3].tokens, 450u);
  EXPECT_DOUBLE_EQ(t.buckets[3].run_seconds, 0.018);
  EXPECT_DOUBLE_EQ(t.buckets[3].max_run_seconds, 0.010);
  EXPECT_DOUBLE_EQ(t.buckets[3].launch_seconds, 0.007);
  EXPECT_DOUBLE_EQ(t.buckets[0].launch_seconds, 0.002);
  EXPECT_EQ(t.steps(), 5u);
  EXPECT_DOUBLE_EQ(t.run_seconds(), 0.081);
  EXPECT_DOUBLE_EQ(t.worker_gap_seconds, 0.0004);
}

TEST(StepTimes, DecodesAboveTheLargestBucketGetAnOpenOne) {
  StepTimes t;
  t.record(true, 512, 512, 0.02, 0.0, 0.0);
  ASSERT_EQ(t.buckets.size(), 1u);
  EXPECT_EQ(t.buckets[0].min_rows, 257);
  EXPECT_GT(t.buckets[0].max_rows, 512);
}

}  // namespace
}  // namespace minivllm
