#pragma once
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11): four
// random 32-bit words from a 128-bit counter and a 64-bit key, with no state, so any thread can
// draw the numbers of any (key, counter) in any order. Included by .cu files only.
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda::detail {

__device__ __forceinline__ uint4 philox4x32_10(uint4 counter, std::uint64_t key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  auto k0 = static_cast<std::uint32_t>(key);
  auto k1 = static_cast<std::uint32_t>(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const std::uint32_t hi0 = __umulhi(kMul0, counter.x), lo0 = kMul0 * counter.x;
    const std::uint32_t hi1 = __umulhi(kMul1, counter.z), lo1 = kMul1 * counter.z;
    counter = make_uint4(hi1 ^ counter.y ^ k0, lo1, hi0 ^ counter.w ^ k1, lo0);
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

}  // namespace minivllm::cuda::detail
