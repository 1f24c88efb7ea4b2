#include "backend/host_pool.hpp"

#include <sys/mman.h>

#include <iterator>
#include <new>
#include <utility>

#include "backend/size_class.hpp"

namespace minivllm {

std::shared_ptr<HostPool> HostPool::create(std::chrono::milliseconds decay) {
  std::shared_ptr<HostPool> pool(new HostPool(decay));
  pool->decayer_ = std::thread([raw = pool.get()] { raw->decay_idle(); });
  return pool;
}

HostPool::~HostPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  decayer_.join();
  for (auto& [bytes, blocks] : idle_)
    for (const Idle& idle : blocks) munmap(idle.block, bytes);
}

std::shared_ptr<void> HostPool::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes < kMinBytes ? kMinBytes : bytes);
  void* block = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = idle_.find(size);
    if (it != idle_.end() && !it->second.empty()) {
      block = it->second.back().block;  // the most recently used: its pages are likeliest warm
      it->second.pop_back();
      idle_bytes_ -= size;
    }
  }
  if (block == nullptr) {
    block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    std::lock_guard lock(mutex_);
    mapped_bytes_ += size;
  }
  return {block, [pool = shared_from_this(), size](void* p) { pool->release(p, size); }};
}

std::size_t HostPool::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  return mapped_bytes_;
}

std::size_t HostPool::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

void HostPool::release(void* block, std::size_t bytes) {
  bool was_empty = false;
  {
    std::lock_guard lock(mutex_);
    was_empty = idle_bytes_ == 0;
    idle_[bytes].push_back({block, Clock::now()});
    idle_bytes_ += bytes;
  }
  if (was_empty) wake_.notify_one();  // the thread sleeps without a deadline while none is idle
}

void HostPool::decay_idle() {
  std::vector<std::pair<void*, std::size_t>> stale;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (idle_bytes_ == 0) {
      wake_.wait(lock);
      continue;
    }
    // The oldest idle buffer sets the next deadline.
    Clock::time_point oldest = Clock::time_point::max();
    for (const auto& [bytes, blocks] : idle_)
      if (!blocks.empty() && blocks.front().since < oldest) oldest = blocks.front().since;
    if (wake_.wait_until(lock, oldest + decay_) == std::cv_status::no_timeout) continue;
    const Clock::time_point cutoff = Clock::now() - decay_;
    for (auto it = idle_.begin(); it != idle_.end();) {
      auto& blocks = it->second;
      std::size_t n = 0;  // blocks come back in time order: the stale ones lead
      for (; n < blocks.size() && blocks[n].since <= cutoff; ++n)
        stale.emplace_back(blocks[n].block, it->first);
      idle_bytes_ -= n * it->first;
      mapped_bytes_ -= n * it->first;
      blocks.erase(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(n));
      it = blocks.empty() ? idle_.erase(it) : std::next(it);
    }
    lock.unlock();  // unmapping takes a while: allocate and release go on meanwhile
    for (const auto& [block, bytes] : stale) munmap(block, bytes);
    stale.clear();
    lock.lock();
  }
}

}  // namespace minivllm
