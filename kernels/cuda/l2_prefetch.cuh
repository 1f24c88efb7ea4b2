#pragma once
// A hint a GEMM launcher takes: bytes its blocks ask the L2 to fetch from HBM while they run (the
// next projection's weights), so that the read overlaps this kernel's tail and the small kernels
// before the next GEMM instead of starting when that GEMM does. Only a hint: what is asked for is
// never read here, and an empty one asks for nothing.
#include <cstddef>
#include <cstdint>

namespace minivllm::cuda {

struct L2Prefetch {
  const void* data = nullptr;  // 16-byte aligned
  std::size_t bytes = 0;       // a multiple of 16; 0: nothing
};

// Whether launchers take `prefetch`: empty, or 16-byte aligned, a multiple of 16 bytes and under
// 4 GiB (a block's share is one 32-bit bulk prefetch).
inline bool l2_prefetch_valid(const L2Prefetch& prefetch) {
  return prefetch.bytes == 0 ||
         (prefetch.data != nullptr && reinterpret_cast<std::uintptr_t>(prefetch.data) % 16 == 0 &&
          prefetch.bytes % 16 == 0 && prefetch.bytes < (std::size_t{1} << 32));
}

}  // namespace minivllm::cuda
