#include "kernels/cpu/embedding.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/convert.hpp"

namespace minivllm::cpu {

void embedding(const void* table, DType table_dtype, std::int64_t first_id, std::int64_t rows,
               std::int64_t vocab, std::int64_t dim, const std::int32_t* ids,
               std::int64_t num_tokens, float* out) {
  const auto* bytes = static_cast<const char*>(table);
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * dtype_size(table_dtype);
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab)
      throw std::out_of_range("token id " + std::to_string(ids[t]) + " outside the vocabulary of " +
                              std::to_string(vocab));
    const std::int64_t row = ids[t] - first_id;
    if (row < 0 || row >= rows)
      std::fill(out + t * dim, out + (t + 1) * dim, 0.0f);
    else
      to_f32(bytes + static_cast<std::size_t>(row) * row_bytes, table_dtype, out + t * dim, dim);
  }
}

}  // namespace minivllm::cpu
