#pragma once
// The CPU backend's tensor-parallel group: its ranks are threads of one process, each with its
// own CpuOps, that meet at every collective and read each other's tensors in place. A sum adds
// the ranks' values in rank order, so every rank gets the same bits on every run.
//
// A rank whose step fails aborts the group: the others, at their next collective or already
// waiting in one, fail that step too instead of waiting forever. The group mends at the next
// step boundary (begin_step), which every rank passes once per step; close() breaks it for good
// (a rank that is gone).
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace minivllm {

class CpuCollectives {
 public:
  explicit CpuCollectives(int ranks);

  int ranks() const { return ranks_; }

  // `x` (n floats) summed over the ranks, in place. Throws minivllm::Error when the group is
  // broken.
  void all_reduce(int rank, float* x, std::size_t n);
  // Each rank's x [rows, cols] into out [rows, cols * ranks], rank r's in columns
  // [r * cols, (r + 1) * cols). Throws as all_reduce.
  void all_gather(int rank, const float* x, std::int64_t rows, std::int64_t cols, float* out);

  // Waits until every rank has begun the step; mends a group that the last step aborted.
  // Throws minivllm::Error once the group is closed.
  void begin_step();
  // Fails the collectives of this step on every rank, naming `why`.
  void abort(const std::string& why);
  // Fails every collective and step from now on, naming `why`.
  void close(const std::string& why);

 private:
  // Waits until every rank has arrived at this meeting (or the group broke: throws).
  void meet(std::unique_lock<std::mutex>& lock);

  const int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<const float*> inputs_;  // each rank's tensor at the current collective
  int arrived_ = 0;                   // ranks at the current meeting
  std::uint64_t meetings_ = 0;        // meetings completed
  int starting_ = 0;                  // ranks at the current step boundary
  std::uint64_t steps_ = 0;           // step boundaries passed
  std::string broken_;                // not empty: why this step's collectives fail
  bool closed_ = false;
};

}  // namespace minivllm
