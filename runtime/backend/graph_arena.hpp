#pragma once
// The device memory of captured forward steps (CUDA graphs): a graph keeps the addresses it was
// captured with, so its blocks must never go to anyone else. The graphs of one runner replay one
// at a time on one stream, so they share it: each capture starts from reset() and is handed the
// same memory again (a bump allocator over chunks, with freed blocks reused by size class within
// one capture). A warm-up run of the same step before the capture grows the chunks, so that the
// capture itself finds the same blocks ready and calls no cudaMalloc.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/device_allocator.hpp"

namespace minivllm::cuda {

class GraphArena final : public DeviceAllocator, public std::enable_shared_from_this<GraphArena> {
 public:
  static std::shared_ptr<GraphArena> create(int device);
  ~GraphArena() override;
  GraphArena(const GraphArena&) = delete;
  GraphArena& operator=(const GraphArena&) = delete;

  std::shared_ptr<void> allocate(std::size_t bytes) override;

  // Every block handed out so far counts as free again: its holders must be done with it (in
  // stream order). Blocks handed out before a reset come back without effect.
  void reset();

  std::size_t reserved_bytes() const;

 private:
  struct Chunk {
    void* base = nullptr;
    std::size_t bytes = 0;
  };
  explicit GraphArena(int device) : device_(device) {}
  void release(void* block, std::size_t bytes, std::uint64_t generation);

  int device_;
  mutable std::mutex mutex_;
  std::vector<Chunk> chunks_;
  std::size_t chunk_ = 0;   // the chunk being filled
  std::size_t offset_ = 0;  // bytes of it handed out
  std::uint64_t generation_ = 0;  // counts resets
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> blocks freed since the reset
};

}  // namespace minivllm::cuda
