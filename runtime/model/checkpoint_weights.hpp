#pragma once
// The WeightLoader over a checkpoint folder: tensors by Hugging Face name, shape-checked, copied
// to the backend's device; under tensor parallelism, rank r's column or row split.
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/ops.hpp>
#include <minivllm/weights.hpp>

#include "checkpoint/safetensors.hpp"

namespace minivllm {

class CheckpointWeights final : public WeightLoader {
 public:
  // `checkpoint` and `ops` must outlive this loader.
  CheckpointWeights(const Checkpoint& checkpoint, Ops& ops, int tp_rank = 0, int tp_size = 1);

  int tp_rank() const override { return tp_rank_; }
  int tp_size() const override { return tp_size_; }
  Tensor load(std::string_view name, const Shape& full_shape, Split split = Split::none) override;
  Tensor load_stacked(const std::vector<WeightPart>& parts) override;

  // The checkpoint's tensors no load asked for, in file order: a model family whose weight map
  // misses what its checkpoint has (or a checkpoint with extras).
  std::vector<std::string> unused() const;

 private:
  // The tensor `name`, checked to have `full_shape`.
  const TensorView& find(std::string_view name, const Shape& full_shape) const;
  // The shape of one of `pieces` equal pieces of `view` along `axis`; throws when it does not
  // divide evenly.
  Shape piece_shape(const TensorView& view, std::string_view name, std::size_t axis,
                    std::int64_t pieces) const;

  const Checkpoint& checkpoint_;
  Ops& ops_;
  int tp_rank_;
  int tp_size_;
  std::set<std::string, std::less<>> loaded_;
};

}  // namespace minivllm
