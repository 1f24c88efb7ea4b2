#include "backend/cuda_step_runner.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace minivllm::cuda {

CudaStepRunner::CudaStepRunner(CudaOps& ops, StepForward forward, bool cuda_graphs,
                               std::int32_t max_prefill_graph_tokens)
    : ops_(ops), forward_(std::move(forward)), uploader_(ops.stream()),
      graphs_(cuda_graphs
                  ? std::make_unique<StepGraphs>(ops, uploader_, max_prefill_graph_tokens)
                  : nullptr) {}

void CudaStepRunner::prepare(const StepLimits& limits) {
  if (graphs_ != nullptr) graphs_->prepare(limits, forward_);
}

Tensor CudaStepRunner::run(const Batch& batch) {
  const bool fed = std::any_of(batch.token_ids.begin(), batch.token_ids.end(),
                               [](std::int32_t id) { return id < 0; });
  if (graphs_ != nullptr)
    if (const std::optional<StepShape> shape = graphs_->shape_of(batch))
      return graphs_->run(batch, *shape, forward_, fed);
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
