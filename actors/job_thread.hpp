#pragma once
// A thread of its own that makes a State, runs the jobs posted to it on that State one after
// another, in order, and destroys it: everything a State holds is made, used and freed on one
// thread (a CUDA device's context and stream stay with the thread that made them). Waking it
// costs a plain condition variable, far less than a detached CAF actor's mailbox on these
// machines (benchmarks/actor_handoff_bench.cpp); where cores are plenty it first spins a while
// for the next job, so a job posted soon after the last one ends needs no wake-up at all.
// Between jobs it may have idle work of its own (a step on a device to answer once done), run
// in turns with looking for the next job.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "actors/usable_cores.hpp"

namespace minivllm {

// How long a JobThread spins for its next job before it sleeps, where cores are plenty: longer
// than a decode step's turn-around between two jobs (the next step is posted while the current
// one runs, or some 20 µs after it ends), short enough that an idle runtime soon stops spinning.
constexpr std::chrono::microseconds kJobThreadSpin{100};

// How long a JobThread whose idle work is pending sleeps between two calls of it while no job
// comes, where cores are few (where they are plenty it spins between the calls).
constexpr std::chrono::microseconds kJobThreadIdlePoll{20};

template <class State>
class JobThread {
 public:
  using Job = std::function<void(State&)>;
  // Work of the thread's own between jobs (a step on a device to collect once done): called
  // again and again while no job is waiting, until it returns false (nothing left).
  using Idle = std::function<bool(State&)>;

  explicit JobThread(std::function<State()> make,
                     std::chrono::microseconds spin = default_spin())
      : JobThread(std::move(make), Idle{}, spin) {}

  JobThread(std::function<State()> make, Idle idle,
            std::chrono::microseconds spin = default_spin())
      : queue_(std::make_shared<Queue>(spin)),
        thread_([queue = queue_, make = std::move(make), idle = std::move(idle)] {
          run(*queue, make, idle);
        }) {}

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
    explicit Queue(std::chrono::microseconds spin) : spin_(spin) {}

    // Notifies under the lock: once it is released, the woken thread may run a job that
    // destroys this queue's last owner.
    void push(Job job) {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
      ready_.store(true, std::memory_order_release);
      if (sleeping_) wake_.notify_one();  // a busy or spinning thread finds the job by itself
    }

    // The next job, waiting for one; false once stopped.
    bool pop(Job& job) {
      spin_until_ready();
      std::unique_lock lock(mutex_);
      sleeping_ = true;
      wake_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
      sleeping_ = false;
      if (stopped_) return false;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ready_.store(!jobs_.empty(), std::memory_order_relaxed);
      return true;
    }

    // Runs idle(state) while no job (nor the stop) is waiting and it asks to go on.
    void run_idle(State& state, const Idle& idle) {
      while (!ready_.load(std::memory_order_acquire) && idle(state)) {
        if (spin_.count() > 0) {
          for (int i = 0; i < 32; ++i) spin_pause();
          continue;
        }
        std::unique_lock lock(mutex_);
        sleeping_ = true;
        wake_.wait_for(lock, kJobThreadIdlePoll, [&] { return stopped_ || !jobs_.empty(); });
        sleeping_ = false;
      }
    }

    void stop() {
      std::deque<Job> dropped;
      {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        ready_.store(true, std::memory_order_release);
        dropped.swap(jobs_);
        wake_.notify_one();  // under the lock, as in push
      }
    }

   private:
    // Returns when a job (or the stop) is there or the spin is over, whichever comes first.
    void spin_until_ready() const {
      if (spin_.count() == 0 || ready_.load(std::memory_order_acquire)) return;
      const auto until = std::chrono::steady_clock::now() + spin_;
      while (!ready_.load(std::memory_order_acquire)) {
        for (int i = 0; i < 32; ++i) spin_pause();
        if (std::chrono::steady_clock::now() >= until) return;
      }
    }

    const std::chrono::microseconds spin_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> jobs_;
    std::atomic<bool> ready_{false};  // jobs_ holds a job or stopped_: read without the lock
    bool sleeping_ = false;           // waiting on wake_
    bool stopped_ = false;
  };

  static std::chrono::microseconds default_spin() {
    return may_spin() ? kJobThreadSpin : std::chrono::microseconds{0};
  }

  static void run(Queue& queue, const std::function<State()>& make, const Idle& idle) {
    State state = make();
    for (;;) {
      if (idle) queue.run_idle(state, idle);
      Job job;
      if (!queue.pop(job)) return;
      job(state);
    }
  }

  std::shared_ptr<Queue> queue_;
  std::thread thread_;
};

}  // namespace minivllm
