#include "backend/device_pool.hpp"

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

namespace {

// Sizes are rounded up so that near-equal requests (activations of varying token counts) share
// free lists; 512 bytes also keeps every block aligned for vectorized kernels.
std::size_t round_up(std::size_t bytes) {
  constexpr std::size_t kGranule = 512;
  return bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

std::shared_ptr<DevicePool> DevicePool::create(int device) {
  return std::shared_ptr<DevicePool>(new DevicePool(device));
}

DevicePool::~DevicePool() {
  // No throwing from a destructor: a failing cudaFree at shutdown is not worth a terminate.
  cudaSetDevice(device_);
  for (auto& [bytes, blocks] : free_)
    for (void* block : blocks) cudaFree(block);
}

void DevicePool::release_idle() {
  std::lock_guard lock(mutex_);
  for (auto& [bytes, blocks] : free_)
    for (void* block : blocks) MV_CUDA_CHECK(cudaFree(block));
  free_.clear();
}

std::shared_ptr<void> DevicePool::allocate(std::size_t bytes) {
  const std::size_t size = round_up(bytes);
  void* block = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
    }
  }
  if (block == nullptr) {
    MV_CUDA_CHECK(cudaSetDevice(device_));
    if (cudaMalloc(&block, size) == cudaErrorMemoryAllocation) {
      // Idle blocks of other sizes may be what is missing: give them back and try once more.
      cudaGetLastError();  // clears the (non-sticky) allocation error
      release_idle();
      MV_CUDA_CHECK(cudaMalloc(&block, size));
    }
  }
  return {block, [pool = shared_from_this(), size](void* p) { pool->release(p, size); }};
}

void DevicePool::release(void* block, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  free_[bytes].push_back(block);
}

}  // namespace minivllm::cuda
