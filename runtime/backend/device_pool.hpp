#pragma once
// A caching allocator of device memory: freed blocks are kept by size class and handed out
// again, so that steps after the first few neither cudaMalloc (an implicit barrier) nor cudaFree
// (which waits for the whole device). Blocks are reused in stream order, which is safe while all
// work runs on one stream (CudaOps has one).
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/device_allocator.hpp"

namespace minivllm::cuda {

class DevicePool final : public DeviceAllocator, public std::enable_shared_from_this<DevicePool> {
 public:
  static std::shared_ptr<DevicePool> create(int device);
  ~DevicePool() override;
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  std::shared_ptr<void> allocate(std::size_t bytes) override;

  // How many blocks came from cudaMalloc so far: flat once a workload's sizes have been seen.
  std::size_t device_allocations() const;

 private:
  explicit DevicePool(int device) : device_(device) {}
  void release(void* block, std::size_t bytes);
  // cudaFrees every idle block. It waits for the device: only when cudaMalloc runs out of memory.
  void release_idle();

  int device_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> idle blocks
  std::size_t device_allocations_ = 0;
};

}  // namespace minivllm::cuda
