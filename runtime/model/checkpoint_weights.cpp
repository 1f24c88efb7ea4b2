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

// How an error names a tensor that was found.
std::string where(const TensorView& view, std::string_view name) {
  return view.file.string() + ": tensor '" + std::string(name) + "'";
}

}  // namespace

CheckpointWeights::CheckpointWeights(const Checkpoint& checkpoint, Ops& ops, int tp_rank,
                                     int tp_size)
    : checkpoint_(checkpoint), ops_(ops), tp_rank_(tp_rank), tp_size_(tp_size) {
  if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size)
    throw Error("tensor parallel rank " + std::to_string(tp_rank) + " of " +
                std::to_string(tp_size) + " is out of range");
}

const TensorView& CheckpointWeights::find(std::string_view name, const Shape& full_shape) const {
  const TensorView* view = checkpoint_.find(name);
  if (view == nullptr)
    throw Error(weights_file(checkpoint_).string() + ": no tensor '" + std::string(name) + "'");
  if (view->shape != full_shape)
    throw Error(where(*view, name) + " has shape " + shape_string(view->shape) + ", expected " +
                shape_string(full_shape));
  return *view;
}

std::vector<std::string> CheckpointWeights::unused() const {
  std::vector<std::string> names;
  for (const TensorView* t : checkpoint_.tensors())
    if (loaded_.count(t->name) == 0) names.push_back(t->name);
  return names;
}

Shape CheckpointWeights::piece_shape(const TensorView& view, std::string_view name,
                                     std::size_t axis, std::int64_t pieces) const {
  if (view.shape.size() <= axis || view.shape.size() > 2 || view.shape[axis] % pieces != 0)
    throw Error(where(view, name) + " of shape " + shape_string(view.shape) +
                " does not split " + std::to_string(pieces) + " ways along dimension " +
                std::to_string(axis));
  Shape part = view.shape;
  part[axis] /= pieces;
  return part;
}

Tensor CheckpointWeights::load(std::string_view name, const Shape& full_shape, Split split) {
  const TensorView& view = find(name, full_shape);
  loaded_.emplace(name);
  if (split == Split::none || tp_size_ == 1)
    return ops_.from_host(view.bytes.data(), view.dtype, view.shape);

  const std::size_t axis = split == Split::column ? 0 : 1;
  const Shape part = piece_shape(view, name, axis, tp_size_);
  // Row-major [out, in] (a bias [out]: one column): a column split is one contiguous run of rows; a row split takes the
  // same run of columns from every row.
  const std::size_t elem = dtype_size(view.dtype);
  const std::size_t row_bytes = static_cast<std::size_t>(full_shape.size() == 2 ? full_shape[1] : 1) * elem;
  const std::size_t part_row_bytes = static_cast<std::size_t>(part.size() == 2 ? part[1] : 1) * elem;
  std::vector<std::byte> host(static_cast<std::size_t>(part[0]) * part_row_bytes);
  for (std::int64_t r = 0; r < part[0]; ++r) {
    const std::int64_t src_row = axis == 0 ? tp_rank_ * part[0] + r : r;
    const std::size_t src_col = axis == 1 ? static_cast<std::size_t>(tp_rank_) * part_row_bytes : 0;
    std::memcpy(host.data() + static_cast<std::size_t>(r) * part_row_bytes,
                view.bytes.data() + static_cast<std::size_t>(src_row) * row_bytes + src_col,
                part_row_bytes);
  }
  return ops_.from_host(host.data(), view.dtype, part);
}

Tensor CheckpointWeights::load_stacked(const std::vector<WeightPart>& parts) {
  if (parts.empty()) throw Error("load_stacked: no weights to stack");
  std::vector<const TensorView*> views;
  std::vector<std::int64_t> rows;   // this rank's rows of each part
  std::vector<std::int64_t> piece;  // which piece of each part they are
  std::int64_t stacked_rows = 0;
  for (const WeightPart& p : parts) {
    const TensorView& view = find(p.name, p.full_shape);
    loaded_.emplace(p.name);
    const std::int64_t pieces = p.pieces == 0 ? tp_size_ : p.pieces;
    if (pieces < 1 || tp_size_ % pieces != 0)
      throw Error(where(view, p.name) + ": " + std::to_string(pieces) + " pieces do not spread over " +
                  std::to_string(tp_size_) + " tensor-parallel ranks (the ranks must be a multiple)");
    const Shape part = piece_shape(view, p.name, 0, pieces);
    const TensorView& first = views.empty() ? view : *views.front();
    if (view.dtype != first.dtype || view.shape.size() != first.shape.size() ||
        (view.shape.size() == 2 && view.shape[1] != first.shape[1]))
      throw Error(where(view, p.name) + " (" + std::string(dtype_name(view.dtype)) + " " +
                  shape_string(view.shape) + ") does not stack with tensor '" +
                  std::string(parts.front().name) + "' (" + std::string(dtype_name(first.dtype)) +
                  " " + shape_string(first.shape) + ")");
    views.push_back(&view);
    rows.push_back(part[0]);
    piece.push_back(tp_rank_ * pieces / tp_size_);
    stacked_rows += part[0];
  }
  // A column split of a row-major [out, in] tensor (or of a bias [out]) is one contiguous run
  // of its rows.
  const bool vectors = views.front()->shape.size() == 1;
  const Shape stacked = vectors ? Shape{stacked_rows} : Shape{stacked_rows, views.front()->shape[1]};
  const std::size_t row_bytes =
      static_cast<std::size_t>(vectors ? 1 : stacked[1]) * dtype_size(views.front()->dtype);
  std::vector<std::byte> host(static_cast<std::size_t>(stacked_rows) * row_bytes);
  std::byte* dst = host.data();
  for (std::size_t i = 0; i < views.size(); ++i) {
    const std::size_t bytes = static_cast<std::size_t>(rows[i]) * row_bytes;
    std::memcpy(dst, views[i]->bytes.data() + static_cast<std::size_t>(piece[i]) * bytes, bytes);
    dst += bytes;
  }
  return ops_.from_host(host.data(), views.front()->dtype, stacked);
}

}  // namespace minivllm
