#include "backend/device_pool.hpp"

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

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
  const std::size_t size = size_class(bytes);
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
    std::lock_guard lock(mutex_);
    ++device_allocations_;
  }
  return {block, [pool = shared_from_this(), size](void* p) { pool->release(p, size); }};
}

std::size_t DevicePool::device_allocations() const {
  std::lock_guard lock(mutex_);
  return device_allocations_;
}

void DevicePool::release(void* block, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  free_[bytes].push_back(block);
}

}  // namespace minivllm::cuda
