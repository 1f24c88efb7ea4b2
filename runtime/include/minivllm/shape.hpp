#pragma once
// Tensor shapes: dimensions, outermost first.
#include <cstdint>
#include <string>
#include <vector>

namespace minivllm {

using Shape = std::vector<std::int64_t>;

// Number of elements (1 for a scalar's empty shape).
inline std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// "[2, 64]"
inline std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace minivllm
