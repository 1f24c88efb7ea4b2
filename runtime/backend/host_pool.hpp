#pragma once
// A caching allocator of the CPU backend's large buffers (a step's logits above all: rows x
// vocabulary floats). A buffer is mapped once and handed out again to later steps of its size
// class; one left idle for `decay` goes back to the kernel from a background thread, as
// jemalloc's decay does, so a burst's buffers do not stay resident once serving calms down. Why
// not malloc: after glibc frees one large mapped chunk it raises its mmap threshold to that size,
// later buffers of a burst land in the heap, and a heap keeps their pages for good (a server's
// resident memory stayed tens of MB higher after each burst of large batches).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace minivllm {

class HostPool final : public std::enable_shared_from_this<HostPool> {
 public:
  // Requests below this go to operator new: small chunks do not pin a heap's pages for long.
  static constexpr std::size_t kMinBytes = std::size_t{256} << 10;

  static std::shared_ptr<HostPool> create(
      std::chrono::milliseconds decay = std::chrono::milliseconds(1000));
  // Unmaps the idle buffers (buffers in use hold the pool through their deleters).
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  // At least `bytes` of page-aligned memory; the last copy of the pointer gives it back (its
  // deleter keeps the pool alive). Throws std::bad_alloc when the kernel refuses.
  std::shared_ptr<void> allocate(std::size_t bytes);

  std::size_t mapped_bytes() const;  // in use and idle
  std::size_t idle_bytes() const;

 private:
  using Clock = std::chrono::steady_clock;
  explicit HostPool(std::chrono::milliseconds decay) : decay_(decay) {}
  void release(void* block, std::size_t bytes);
  // The background thread: unmaps buffers idle for decay_ until the pool goes.
  void decay_idle();

  struct Idle {
    void* block;
    Clock::time_point since;
  };
  const std::chrono::milliseconds decay_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // a buffer went idle, or the pool is going
  bool stopping_ = false;
  std::map<std::size_t, std::vector<Idle>> idle_;  // size class -> idle buffers, oldest first
  std::size_t mapped_bytes_ = 0;
  std::size_t idle_bytes_ = 0;
  std::thread decayer_;
};

}  // namespace minivllm
