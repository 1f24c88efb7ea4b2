#pragma once
// The size a pooled request is served with (DevicePool, GraphArena, HostPool): requests that
// differ a little (activations of varying token counts) share a size, so a cache of freed blocks
// stops growing after a few steps. Eight sizes per power of two below 64 MiB (at most 12.5 %
// more than asked), 2 MiB steps above it (the KV cache and weights: at most 3 %); never below
// 512 bytes.
#include <algorithm>
#include <bit>
#include <cstddef>

namespace minivllm {

inline std::size_t size_class(std::size_t bytes) {
  constexpr std::size_t kMin = 512, kLarge = std::size_t{64} << 20, kLargeStep = std::size_t{2} << 20;
  if (bytes <= kMin) return kMin;
  const std::size_t step = bytes > kLarge ? kLargeStep : std::max(kMin, std::bit_floor(bytes - 1) / 8);
  return (bytes + step - 1) / step * step;
}

}  // namespace minivllm
