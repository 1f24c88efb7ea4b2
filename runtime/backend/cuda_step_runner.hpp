#pragma once
// CudaOps' StepRunner: stages each step's Batch on the device in one pinned copy that every op of
// the step reads, and, with cuda_graphs, replays pure-decode steps and small prefill steps as CUDA
// graphs (step_graphs.hpp).
//
// Fed steps, the CUDA backend's own extension of the batch (the plugin API knows nothing of it):
// a decode step queued before the step ahead of it has brought its tokens to the host names them
// by row, token id -1 - r for the token the last sampling put in row r (CudaOps'
// sampled_tokens(), which the embedding reads). A batch with a negative id is a fed step.
#include <cstddef>
#include <memory>

#include <minivllm/ops.hpp>

#include "backend/batch_upload.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/step_graphs.hpp"

namespace minivllm::cuda {

class CudaStepRunner final : public StepRunner {
 public:
  // `ops` must outlive the runner. With cuda_graphs, prefill steps of up to
  // `max_prefill_graph_tokens` tokens are replayed too (0: none).
  CudaStepRunner(CudaOps& ops, StepForward forward, bool cuda_graphs,
                 std::int32_t max_prefill_graph_tokens = kMaxPrefillGraphTokens);

  Tensor run(const Batch& batch) override;
  void prepare(const StepLimits& limits) override;

  const StepGraphs* graphs() const { return graphs_.get(); }  // null without cuda_graphs

 private:
  CudaOps& ops_;
  StepForward forward_;
  BatchUploader uploader_;
  std::shared_ptr<void> inputs_;  // the staged batch on the device, grown when a step needs more
  std::size_t inputs_bytes_ = 0;  // what the pool handed out: the size class of the request
  std::unique_ptr<StepGraphs> graphs_;  // null without cuda_graphs
};

}  // namespace minivllm::cuda
