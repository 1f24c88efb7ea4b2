#include "model/checkpoint_weights.hpp"

#include <cstring>
#include <string>
#include <vector>

#include <minivllm/error.hpp>

namespace minivllm {

namespace {

// The file a missing tensor should have been in: the shard index, or the single file.
std::filesystem::path weights_file(const Checkpoint& checkpoint) {
  const auto index = checkpoint.dir() / "model.safetensors.index.json";
  return std::filesystem::exists(index) ? index : checkpoint.dir() / "model.safetensors";
}

}  // namespace

CheckpointWeights::CheckpointWeights(const Checkpoint& checkpoint, Ops& ops, int tp_rank,
                                     int tp_size)
    : checkpoint_(checkpoint), ops_(ops), tp_rank_(tp_rank), tp_size_(tp_size) {
  if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size)
    throw Error("tensor parallel rank " + std::to_string(tp_rank) + " of " +
                std::to_string(tp_size) + " is out of range");
}

Tensor CheckpointWeights::load(std::string_view name, const Shape& full_shape, Split split) {
  const TensorView* view = checkpoint_.find(name);
  if (view == nullptr)
    throw Error(weights_file(checkpoint_).string() + ": no tensor '" + std::string(name) + "'");
  const std::string where = view->file.string() + ": tensor '" + std::string(name) + "'";
  if (view->shape != full_shape)
    throw Error(where + " has shape " + shape_string(view->shape) + ", expected " +
                shape_string(full_shape));
  if (split == Split::none || tp_size_ == 1)
    return ops_.from_host(view->bytes.data(), view->dtype, view->shape);

  const std::size_t axis = split == Split::column ? 0 : 1;
  if (full_shape.size() != 2 || full_shape[axis] % tp_size_ != 0)
    throw Error(where + " of shape " + shape_string(full_shape) + " does not split " +
                std::to_string(tp_size_) + " ways along dimension " + std::to_string(axis));
  Shape part = full_shape;
  part[axis] /= tp_size_;
  // Row-major [out, in]: a column split is one contiguous run of rows; a row split takes the
  // same run of columns from every row.
  const std::size_t elem = dtype_size(view->dtype);
  const std::size_t row_bytes = static_cast<std::size_t>(full_shape[1]) * elem;
  const std::size_t part_row_bytes = static_cast<std::size_t>(part[1]) * elem;
  std::vector<std::byte> host(static_cast<std::size_t>(part[0]) * part_row_bytes);
  for (std::int64_t r = 0; r < part[0]; ++r) {
    const std::int64_t src_row = axis == 0 ? tp_rank_ * part[0] + r : r;
    const std::size_t src_col = axis == 1 ? static_cast<std::size_t>(tp_rank_) * part_row_bytes : 0;
    std::memcpy(host.data() + static_cast<std::size_t>(r) * part_row_bytes,
                view->bytes.data() + static_cast<std::size_t>(src_row) * row_bytes + src_col,
                part_row_bytes);
  }
  return ops_.from_host(host.data(), view->dtype, part);
}

}  // namespace minivllm
