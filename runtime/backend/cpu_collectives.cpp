#include "backend/cpu_collectives.hpp"

#include <algorithm>

#include <minivllm/error.hpp>

namespace minivllm {

CpuCollectives::CpuCollectives(int ranks) : ranks_(ranks), inputs_(static_cast<std::size_t>(ranks)) {
  if (ranks < 1) throw Error("a tensor-parallel group needs at least one rank");
}

void CpuCollectives::meet(std::unique_lock<std::mutex>& lock) {
  if (!broken_.empty()) throw Error(broken_);
  const std::uint64_t meeting = meetings_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++meetings_;
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return meetings_ != meeting || !broken_.empty(); });
  if (meetings_ == meeting) throw Error(broken_);
}

void CpuCollectives::all_reduce(int rank, float* x, std::size_t n) {
  std::unique_lock lock(mutex_);
  inputs_[static_cast<std::size_t>(rank)] = x;
  meet(lock);  // every rank's x is in place
  lock.unlock();
  std::vector<float> sum(inputs_[0], inputs_[0] + n);
  for (int r = 1; r < ranks_; ++r) {
    const float* in = inputs_[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < n; ++i) sum[i] += in[i];
  }
  lock.lock();
  meet(lock);  // every rank has read every x: each may now overwrite its own
  lock.unlock();
  std::copy(sum.begin(), sum.end(), x);
}

void CpuCollectives::all_gather(int rank, const float* x, std::int64_t rows, std::int64_t cols,
                                float* out) {
  std::unique_lock lock(mutex_);
  inputs_[static_cast<std::size_t>(rank)] = x;
  meet(lock);
  lock.unlock();
  const std::int64_t width = cols * ranks_;
  for (int r = 0; r < ranks_; ++r)
    for (std::int64_t i = 0; i < rows; ++i)
      std::copy_n(inputs_[static_cast<std::size_t>(r)] + i * cols, cols, out + i * width + r * cols);
  lock.lock();
  meet(lock);  // no rank's x goes away while another still copies it
}

void CpuCollectives::begin_step() {
  std::unique_lock lock(mutex_);
  if (closed_) throw Error(broken_);
  const std::uint64_t step = steps_;
  if (++starting_ == ranks_) {
    // Every rank is here, so none is inside a collective: the group starts the step whole.
    starting_ = 0;
    ++steps_;
    arrived_ = 0;
    broken_.clear();
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return steps_ != step || closed_; });
  if (steps_ == step) throw Error(broken_);
}

void CpuCollectives::abort(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (broken_.empty()) broken_ = why;
  changed_.notify_all();
}

void CpuCollectives::close(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (!closed_) broken_ = why;
  closed_ = true;
  changed_.notify_all();
}

}  // namespace minivllm
