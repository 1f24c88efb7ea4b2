#include "backend/graph_arena.hpp"

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

namespace {
constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
}  // namespace

std::shared_ptr<GraphArena> GraphArena::create(int device) {
  return std::shared_ptr<GraphArena>(new GraphArena(device));
}

GraphArena::~GraphArena() {
  // No throwing from a destructor.
  cudaSetDevice(device_);
  for (const Chunk& c : chunks_) cudaFree(c.base);
}

std::shared_ptr<void> GraphArena::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  std::lock_guard lock(mutex_);
  void* block = nullptr;
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
  } else {
    // The first chunk from the current one on with room; a new one when none has.
    while (chunk_ < chunks_.size() && offset_ + size > chunks_[chunk_].bytes) {
      ++chunk_;
      offset_ = 0;
    }
    if (chunk_ == chunks_.size()) {
      Chunk c{nullptr, std::max(size, kChunkBytes)};
      MV_CUDA_CHECK(cudaSetDevice(device_));
      MV_CUDA_CHECK(cudaMalloc(&c.base, c.bytes));
      chunks_.push_back(c);
    }
    block = static_cast<char*>(chunks_[chunk_].base) + offset_;
    offset_ += size;
  }
  return {block, [arena = shared_from_this(), size, generation = generation_](void* p) {
            arena->release(p, size, generation);
          }};
}

void GraphArena::release(void* block, std::size_t bytes, std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (generation == generation_) free_[bytes].push_back(block);
}

void GraphArena::reset() {
  std::lock_guard lock(mutex_);
  ++generation_;
  free_.clear();
  chunk_ = 0;
  offset_ = 0;
}

std::size_t GraphArena::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const Chunk& c : chunks_) total += c.bytes;
  return total;
}

}  // namespace minivllm::cuda
