#include <algorithm>

#include <gtest/gtest.h>

#include <minivllm/engine_counters.hpp>

namespace minivllm {
namespace {

TEST(Histogram, CountsEachValueInTheFirstBucketWhoseBoundHoldsIt) {
  Histogram h = Histogram::with_bounds({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0}) h.observe(v);
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{2, 2, 1}));  // le 0.1, le 1.0, +Inf
  EXPECT_EQ(h.count, 5u);
  EXPECT_DOUBLE_EQ(h.sum, 4.65);
}

TEST(EngineCounters, BucketsAreVllmsAndAscending) {
  const EngineCounters c;
  EXPECT_EQ(c.time_to_first_token.bounds.front(), 0.001);
  EXPECT_EQ(c.time_to_first_token.bounds.back(), 2560.0);
  EXPECT_EQ(c.inter_token_latency.bounds.front(), 0.01);
  EXPECT_EQ(c.inter_token_latency.bounds.back(), 80.0);
  EXPECT_EQ(c.e2e_request_latency.bounds.back(), 7680.0);
  for (const Histogram* h : {&c.time_to_first_token, &c.inter_token_latency,
                             &c.e2e_request_latency, &c.request_queue_time})
    EXPECT_TRUE(std::is_sorted(h->bounds.begin(), h->bounds.end()));
}

TEST(EngineCounters, FinishedRequestsByReason) {
  EngineCounters c;
  c.count_finished(FinishReason::stop, false);
  c.count_finished(FinishReason::length, false);
  c.count_finished(FinishReason::length, false);
  c.count_finished(FinishReason::abort, false);
  c.count_finished(FinishReason::abort, true);
  EXPECT_EQ(c.finished_stop, 1u);
  EXPECT_EQ(c.finished_length, 2u);
  EXPECT_EQ(c.finished_abort, 1u);
  EXPECT_EQ(c.finished_error, 1u);
}

}  // namespace
}  // namespace minivllm
