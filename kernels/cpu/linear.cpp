#include "kernels/cpu/linear.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/parallel.hpp"

namespace minivllm::cpu {

void linear(const float* x, const void* w, DType w_dtype, float* y, std::int64_t m,
            std::int64_t n, std::int64_t k) {
  const std::size_t w_elem = dtype_size(w_dtype);
  parallel_for(n, m * k, [&](std::int64_t begin, std::int64_t end) {
    // A tile of weight rows is converted to f32 once and reused for every row of x.
    constexpr std::int64_t kTileRows = 16;
    std::vector<float> tile(static_cast<std::size_t>(kTileRows * k));
    for (std::int64_t n0 = begin; n0 < end; n0 += kTileRows) {
      const std::int64_t rows = std::min(kTileRows, end - n0);
      to_f32(static_cast<const char*>(w) + n0 * k * w_elem, w_dtype, tile.data(), rows * k);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < rows; ++j)
          y[i * n + n0 + j] = dot(x + i * k, tile.data() + j * k, k);
    }
  });
}

}  // namespace minivllm::cpu
