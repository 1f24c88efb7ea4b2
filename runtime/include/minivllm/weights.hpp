#pragma once
// How a model gets its weights: by Hugging Face tensor name, checked against the shape the model
// expects, on the backend's device. Under tensor parallelism the loader returns this rank's shard.
#include <string_view>
#include <vector>

#include <minivllm/tensor.hpp>

namespace minivllm {

// Which part of a [out, in] weight a tensor-parallel rank holds.
enum class Split {
  none,    // the whole tensor (norms, embeddings, or no tensor parallelism)
  column,  // column-parallel linear: rank r of n holds output rows [r*out/n, (r+1)*out/n)
  row,     // row-parallel linear: rank r of n holds input columns [r*in/n, (r+1)*in/n)
};

// One of the checkpoint tensors that load_stacked puts together.
struct WeightPart {
  std::string_view name;
  Shape full_shape;  // [out, in], or a bias [out]
  // The part's output rows split into this many equal pieces (0: one per rank); rank r of n
  // holds piece r * pieces / n. Fewer pieces than ranks replicate each piece on n / pieces
  // ranks: the key/value heads when the ranks outnumber them.
  std::int64_t pieces = 0;
};

class WeightLoader {
 public:
  virtual ~WeightLoader() = default;

  virtual int tp_rank() const = 0;
  virtual int tp_size() const = 0;

  // The tensor `name`, whose full shape must be `full_shape`, in its checkpoint dtype; with a
  // split, this rank's part of it. Throws minivllm::Error naming the file and the tensor when it
  // is missing, has another shape, or does not divide evenly.
  virtual Tensor load(std::string_view name, const Shape& full_shape,
                      Split split = Split::none) = 0;
  // Column-parallel weights over the same input (q/k/v, gate/up) stacked along the output
  // dimension into one [sum of out, in] weight, so that one GEMM computes them all. Each part is
  // column-split on its own (into its pieces): rank r holds its rows of every part, in the order
  // given. The parts
  // share dtype and input width (or are all biases [out]); errors as for load.
  virtual Tensor load_stacked(const std::vector<WeightPart>& parts) = 0;
};

}  // namespace minivllm
