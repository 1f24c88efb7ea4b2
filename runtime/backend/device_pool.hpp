#pragma once
// A caching allocator of device memory: freed blocks are kept by (rounded) size and handed out
// again, because cudaFree synchronizes the device and would stall every op. Blocks are reused in
// stream order, which is safe while all work runs on one stream (CudaOps has one).
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace minivllm::cuda {

class DevicePool : public std::enable_shared_from_this<DevicePool> {
 public:
  static std::shared_ptr<DevicePool> create(int device);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // At least `bytes` of device memory; the last copy of the pointer returns it to the pool
  // (the deleter holds the pool, so the pool outlives every block it handed out).
  std::shared_ptr<void> allocate(std::size_t bytes);

 private:
  explicit DevicePool(int device) : device_(device) {}
  void release(void* block, std::size_t bytes);
  void release_idle();  // cudaFrees every idle block (synchronizes: only when memory runs out)

  int device_;
  std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;  // rounded size -> idle blocks
};

}  // namespace minivllm::cuda
