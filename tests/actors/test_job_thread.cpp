// JobThread: its State is made, used and destroyed on its own thread; jobs run in order; the
// destructor drops jobs not started, waits for the running one, and may be called from a job
// (which may drop the last reference to the thread's owner) without deadlock.
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "actors/job_thread.hpp"

namespace minivllm {
namespace {

// Where it was made and destroyed, reported through promises.
struct TracedState {
  std::thread::id made = std::this_thread::get_id();
  std::shared_ptr<std::promise<std::thread::id>> destroyed_on;
  std::vector<int> ran;

  explicit TracedState(std::shared_ptr<std::promise<std::thread::id>> on)
      : destroyed_on(std::move(on)) {}
  TracedState(TracedState&& other) noexcept
      : made(other.made), destroyed_on(std::move(other.destroyed_on)), ran(std::move(other.ran)) {}
  ~TracedState() {
    if (destroyed_on) destroyed_on->set_value(std::this_thread::get_id());
  }
};

TEST(JobThread, RunsJobsInOrderOnTheThreadThatMadeAndDestroysTheState) {
  auto destroyed_on = std::make_shared<std::promise<std::thread::id>>();
  std::future<std::thread::id> destroyed = destroyed_on->get_future();
  std::promise<std::pair<std::thread::id, std::vector<int>>> seen;
  {
    JobThread<TracedState> thread([destroyed_on] { return TracedState(destroyed_on); });
    for (int i = 0; i < 100; ++i) thread.post([i](TracedState& st) { st.ran.push_back(i); });
    thread.post([&seen](TracedState& st) {
      EXPECT_EQ(st.made, std::this_thread::get_id());
      seen.set_value({std::this_thread::get_id(), st.ran});
    });
    const auto [ran_on, ran] = seen.get_future().get();
    EXPECT_NE(ran_on, std::this_thread::get_id());
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[i] = i;
    EXPECT_EQ(ran, expected);
  }
  ASSERT_EQ(destroyed.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "the destructor waits for the thread";
  EXPECT_NE(destroyed.get(), std::this_thread::get_id());
}

TEST(JobThread, DestructorDropsJobsNotStartedAndWaitsForTheRunningOne) {
  auto destroyed_on = std::make_shared<std::promise<std::thread::id>>();
  std::future<std::thread::id> destroyed = destroyed_on->get_future();
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto later_ran = std::make_shared<bool>(false);
  auto thread =
      std::make_unique<JobThread<TracedState>>([destroyed_on] { return TracedState(destroyed_on); });
  thread->post([&started, released](TracedState&) {
    started.set_value();
    released.wait();
  });
  thread->post([later_ran](TracedState&) { *later_ran = true; });
  started.get_future().wait();
  std::thread destroyer([&thread] { thread.reset(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(destroyed.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the State outlives the running job";
  release.set_value();
  destroyer.join();
  EXPECT_EQ(destroyed.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "the destructor waits for the running job and the State's destruction";
  EXPECT_FALSE(*later_ran);
}

TEST(JobThread, CanBeDestroyedByOneOfItsOwnJobs) {
  auto destroyed_on = std::make_shared<std::promise<std::thread::id>>();
  std::future<std::thread::id> destroyed = destroyed_on->get_future();
  auto owner = std::make_shared<std::unique_ptr<JobThread<TracedState>>>();
  *owner =
      std::make_unique<JobThread<TracedState>>([destroyed_on] { return TracedState(destroyed_on); });
  std::promise<std::thread::id> job_ran_on;
  (*owner)->post([owner, &job_ran_on](TracedState&) {
    job_ran_on.set_value(std::this_thread::get_id());
    owner->reset();  // the JobThread is destroyed on its own thread
  });
  const std::thread::id thread_id = job_ran_on.get_future().get();
  ASSERT_EQ(destroyed.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(destroyed.get(), thread_id) << "the State is still destroyed on its own thread";
}

}  // namespace
}  // namespace minivllm
