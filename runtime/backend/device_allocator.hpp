#pragma once
// Where CudaOps takes device memory from: the caching pool, or while a step is being captured
// into a CUDA graph, that graph set's arena. Blocks are used in the order of CudaOps' one stream.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <memory>

namespace minivllm::cuda {

class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // At least `bytes` of device memory, 256-byte aligned; the last copy of the pointer gives it
  // back (its deleter keeps the allocator alive).
  virtual std::shared_ptr<void> allocate(std::size_t bytes) = 0;
};

// The size a request is served with: requests that differ a little (activations of varying
// token counts) share a size, so a cache of freed blocks stops growing after a few steps. Eight
// sizes per power of two below 64 MiB (at most 12.5 % more than asked), 2 MiB steps above it
// (the KV cache and weights: at most 3 %); never below 512 bytes.
inline std::size_t size_class(std::size_t bytes) {
  constexpr std::size_t kMin = 512, kLarge = std::size_t{64} << 20, kLargeStep = std::size_t{2} << 20;
  if (bytes <= kMin) return kMin;
  const std::size_t step = bytes > kLarge ? kLargeStep : std::max(kMin, std::bit_floor(bytes - 1) / 8);
  return (bytes + step - 1) / step * step;
}

}  // namespace minivllm::cuda
