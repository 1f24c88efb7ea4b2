#pragma once
// A thread of its own that makes a State, runs the jobs posted to it on that State one after
// another, in order, and destroys it: everything a State holds is made, used and freed on one
// thread (a CUDA device's context and stream stay with the thread that made them). Waking it
// costs a plain condition variable, far less than a detached CAF actor's mailbox on these
// machines (benchmarks/actor_handoff_bench.cpp).
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace minivllm {

template <class State>
class JobThread {
 public:
  using Job = std::function<void(State&)>;

  explicit JobThread(std::function<State()> make)
      : queue_(std::make_shared<Queue>()),
        thread_([queue = queue_, make = std::move(make)] { run(*queue, make); }) {}

  // Drops the jobs not started yet; the thread ends, destroying the State, once its running job
  // (if any) returns. Waits for that, unless called from that very job (a job may drop the last
  // reference to whatever owns this): then the thread finishes on its own.
  ~JobThread() {
    queue_->stop();
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }

  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  void post(Job job) { queue_->push(std::move(job)); }

 private:
  // Shared with the thread, which may outlive this object (see the destructor).
  class Queue {
   public:
    void push(Job job) {
      bool idle = false;
      {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
        idle = idle_;
      }
      if (idle) wake_.notify_one();  // a busy thread finds the job when its current one ends
    }

    // The next job, waiting for one; false once stopped.
    bool pop(Job& job) {
      std::unique_lock lock(mutex_);
      idle_ = true;
      wake_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
      idle_ = false;
      if (stopped_) return false;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      return true;
    }

    void stop() {
      std::deque<Job> dropped;
      {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        dropped.swap(jobs_);
      }
      wake_.notify_one();
    }

   private:
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> jobs_;
    bool idle_ = false;
    bool stopped_ = false;
  };

  static void run(Queue& queue, const std::function<State()>& make) {
    State state = make();
    for (;;) {
      Job job;
      if (!queue.pop(job)) return;
      job(state);
    }
  }

  std::shared_ptr<Queue> queue_;
  std::thread thread_;
};

}  // namespace minivllm
