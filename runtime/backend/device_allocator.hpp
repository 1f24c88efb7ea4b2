#pragma once
// Where CudaOps takes device memory from: the caching pool, or while a step is being captured
// into a CUDA graph, that graph set's arena. Blocks are used in the order of CudaOps' one stream.
#include <cstddef>
#include <memory>

#include "backend/size_class.hpp"

namespace minivllm::cuda {

class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // At least `bytes` of device memory, 256-byte aligned; the last copy of the pointer gives it
  // back (its deleter keeps the allocator alive).
  virtual std::shared_ptr<void> allocate(std::size_t bytes) = 0;
};

}  // namespace minivllm::cuda
