#include "backend/step_graphs.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include <minivllm/error.hpp>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

StepGraphs::StepGraphs(CudaOps& ops, BatchUploader& uploader, std::int32_t max_prefill_tokens)
    : ops_(ops), uploader_(uploader),
      max_prefill_tokens_(std::clamp(max_prefill_tokens, 0, kMaxPrefillGraphTokens)),
      arena_(GraphArena::create(ops.device_)) {}

std::optional<StepShape> StepGraphs::shape_of(const Batch& batch) const {
  return step_shape_of(batch, max_prefill_tokens_, prefill_width_);
}

const StepGraphs::Graph& StepGraphs::graph_for(const StepShape& shape,
                                               const StepForward& forward, bool fed) {
  const bool seen = std::any_of(graphs_.begin(), graphs_.end(), [&](const auto& known) {
    StepShape other = known.first;
    other.width = shape.width;
    return other == shape;
  });
  const auto [it, fresh] = graphs_.try_emplace(shape);
  if (fresh) {
    try {
      it->second = capture(shape, forward, !seen, fed);  // its ops check the padded batch
    } catch (...) {
      graphs_.erase(it);
      throw;
    }
  }
  return it->second;
}

void StepGraphs::prepare(const StepLimits& limits, const StepForward& forward) {
  const Batch none;  // padded, a step of pad sequences only (no K/V written)
  const std::int32_t last = decode_bucket(std::clamp(limits.max_seqs, 1, kMaxDecodeGraphSeqs));
  const auto widest = static_cast<std::int32_t>(
      std::bit_ceil(static_cast<std::uint32_t>(std::max(limits.max_blocks_per_seq, 1))));
  for (std::int32_t seqs = 1; seqs <= last; seqs = decode_bucket(seqs + 1))
    for (std::int32_t width = 1; width <= widest; width *= 2) {
      const StepShape shape{seqs, seqs, seqs, width, 1};
      pad_step(none, shape, padded_);
      graph_for(shape, forward, false);
    }
  // A prefill shape's first pad sequence holds all but one of its tokens: it must fit the width.
  prefill_width_ = widest;
  const std::int64_t fits = static_cast<std::int64_t>(widest) * limits.block_size + 1;
  for (const std::int32_t tokens :
       prefill_buckets(std::min<std::int64_t>(max_prefill_tokens_, limits.max_tokens), fits)) {
    const StepShape shape = prefill_shape(tokens, widest);
    pad_step(none, shape, padded_);
    graph_for(shape, forward, false);
  }
}

Tensor StepGraphs::run(const Batch& batch, const StepShape& shape, const StepForward& forward,
                       bool fed) {
  pad_step(batch, shape, padded_);
  const auto known = graphs_.find(shape);
  if (known != graphs_.end()) ops_.check_batch(batch, known->second.checked, fed);
  const Graph& g = known != graphs_.end() ? known->second : graph_for(shape, forward, fed);
  uploader_.upload(padded_, g.layout, g.inputs.get());
  MV_CUDA_CHECK(cudaGraphLaunch(g.exec.get(), ops_.stream()));
  ++replays_;
  // The real rows come first; the arena keeps the memory.
  return {std::shared_ptr<void>(arena_, g.logits), g.logits, DType::f32,
          {static_cast<std::int64_t>(batch.logits_rows.size()), g.vocab}, Device::cuda};
}

StepGraphs::Graph StepGraphs::capture(const StepShape& shape, const StepForward& forward,
                                      bool warm_up, bool fed) {
  Graph g;
  g.layout = BatchLayout::of(padded_);
  g.inputs = ops_.pool_->allocate(g.layout.bytes);
  uploader_.upload(padded_, g.layout, g.inputs.get());
  CudaOps::Step step;
  step.batch = &padded_;
  step.device = DeviceBatch::at(g.inputs.get(), g.layout);
  step.fed = fed;
  step.max_query_len = shape.max_query_len;
  if (warm_up) {
    // The same step run eagerly from the arena grows the arena to what the capture takes, loads
    // the kernels and lets cuBLAS choose its algorithms before anything is captured. It writes
    // the same keys and values the replay writes again.
    arena_->reset();
    const CudaOps::StepScope scope(ops_, step, *arena_);
    forward(padded_);
  }
  arena_->reset();
  step.capturing = true;
  cudaStream_t stream = ops_.stream();
  cudaGraph_t graph = nullptr;
  Tensor logits;
  // Relaxed: should the arena still need a chunk, cudaMalloc may run during the capture.
  MV_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    const CudaOps::StepScope scope(ops_, step, *arena_);
    logits = forward(padded_);
  } catch (...) {
    if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr)
      cudaGraphDestroy(graph);
    throw;
  }
  MV_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  MV_CUDA_CHECK(instantiated);
  g.exec.reset(exec);
  if (logits.dtype() != DType::f32 || logits.rank() != 2 ||
      logits.dim(0) != static_cast<std::int64_t>(padded_.logits_rows.size()))
    throw Error("StepGraphs: the captured forward returned logits " +
                shape_string(logits.shape()) + " for " +
                std::to_string(padded_.logits_rows.size()) + " logits rows");
  g.logits = logits.data();
  g.vocab = logits.dim(1);
  g.checked = step.checked;
  return g;
}

}  // namespace minivllm::cuda
