// A JobThread that spins a while for its next job before it sleeps (as it does where cores are
// plenty; on a 2-core machine the runtime never asks for it, so these tests do): a job posted while
// it spins or after it went to sleep runs, in order, and the destructor ends a spinning thread at
// once.
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "actors/job_thread.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;

TEST(SpinningJobThread, RunsJobsPostedWhileItSpinsAndAfterItSleeps) {
  JobThread<int> thread([] { return 0; }, 2ms);
  for (int i = 1; i <= 200; ++i) {
    std::promise<int> count;
    thread.post([&count](int& st) { count.set_value(++st); });
    ASSERT_EQ(count.get_future().get(), i);
    if (i % 50 == 0) std::this_thread::sleep_for(5ms);  // past the spin: the next post wakes it
  }
}

TEST(SpinningJobThread, DestructorEndsASpinningThreadAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  {
    JobThread<int> thread([] { return 0; }, 60s);
    std::promise<void> ran;
    thread.post([&ran](int&) { ran.set_value(); });
    ran.get_future().wait();
  }  // it spins for its next job now
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace minivllm
