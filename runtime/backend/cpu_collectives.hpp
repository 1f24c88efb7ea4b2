#pragma once
// The CPU backend's tensor-parallel group when its ranks are threads of one process, each with
// its own CpuOps: they meet at every collective and read each other's tensors in place.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backend/host_collectives.hpp"

namespace minivllm {

class CpuCollectives final : public HostCollectives {
 public:
  explicit CpuCollectives(int ranks);

  int ranks() const override { return ranks_; }
  void all_reduce(int rank, float* x, std::size_t n) override;
  void all_gather(int rank, const float* x, std::int64_t rows, std::int64_t cols,
                  float* out) override;
  void begin_step() override;
  void abort(const std::string& why) override;
  void close(const std::string& why) override;

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
