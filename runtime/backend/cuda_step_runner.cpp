#include "backend/cuda_step_runner.hpp"

#include <algorithm>
#include <utility>

namespace minivllm::cuda {

CudaStepRunner::CudaStepRunner(CudaOps& ops, StepForward forward, bool cuda_graphs)
    : ops_(ops), forward_(std::move(forward)), uploader_(ops.stream()),
      graphs_(cuda_graphs ? std::make_unique<DecodeGraphs>(ops, uploader_) : nullptr) {}

void CudaStepRunner::prepare_decode(std::int32_t max_seqs, std::int32_t max_blocks_per_seq) {
  if (graphs_ != nullptr) graphs_->prepare(max_seqs, max_blocks_per_seq, forward_);
}

Tensor CudaStepRunner::run(const Batch& batch) {
  const bool fed = std::any_of(batch.token_ids.begin(), batch.token_ids.end(),
                               [](std::int32_t id) { return id < 0; });
  if (graphs_ != nullptr && DecodeGraphs::bucket_of(batch) > 0)
    return graphs_->run(batch, forward_, fed);
  const BatchLayout layout = BatchLayout::of(batch);
  if (inputs_bytes_ < layout.bytes) {
    // The previous buffer goes back to the pool in stream order, after the steps that read it.
    inputs_ = ops_.pool_->allocate(layout.bytes);
    inputs_bytes_ = size_class(layout.bytes);
  }
  uploader_.upload(batch, layout, inputs_.get());
  CudaOps::Step step;
  step.batch = &batch;
  step.device = DeviceBatch::at(inputs_.get(), layout);
  step.fed = fed;
  const CudaOps::StepScope scope(ops_, step, *ops_.pool_);
  return forward_(batch);
}

}  // namespace minivllm::cuda
