#pragma once
// The CPU backend's tensor-parallel collectives, as each rank's CpuOps calls them. Two makers:
// CpuCollectives (the ranks are threads of one process) and the runtime's message collectives
// (actors/collective_hub.hpp: ranks in other processes, through CAF messages). Either sums the
// ranks' values in rank order, so every rank gets the same bits, whichever carries them.
//
// A rank whose step fails aborts the group: the others, at their next collective or already
// waiting in one, fail that step too instead of waiting forever. The group mends at the next
// step boundary (begin_step), which every rank passes once per step; close() breaks it for good
// (a rank that is gone).
#include <cstddef>
#include <cstdint>
#include <string>

namespace minivllm {

class HostCollectives {
 public:
  virtual ~HostCollectives() = default;

  virtual int ranks() const = 0;

  // `x` (n floats) summed over the ranks, in place. Throws minivllm::Error when the group is
  // broken.
  virtual void all_reduce(int rank, float* x, std::size_t n) = 0;
  // Each rank's x [rows, cols] into out [rows, cols * ranks], rank r's in columns
  // [r * cols, (r + 1) * cols). Throws as all_reduce.
  virtual void all_gather(int rank, const float* x, std::int64_t rows, std::int64_t cols,
                          float* out) = 0;

  // Waits until every rank has begun the step; mends a group that the last step aborted.
  // Throws minivllm::Error once the group is closed.
  virtual void begin_step() = 0;
  // Fails the collectives of this step on every rank, naming `why`.
  virtual void abort(const std::string& why) = 0;
  // Fails every collective and step from now on, naming `why`.
  virtual void close(const std::string& why) = 0;
};

}  // namespace minivllm
