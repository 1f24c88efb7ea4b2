#include "backend/decode_graphs.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <string>
#include <tuple>

#include <minivllm/error.hpp>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

DecodeGraphs::DecodeGraphs(CudaOps& ops, BatchUploader& uploader)
    : ops_(ops), uploader_(uploader), arena_(GraphArena::create(ops.device_)) {}

std::int32_t DecodeGraphs::bucket_of(const Batch& batch) {
  const std::int32_t n = batch.num_seqs();
  if (n < 1 || n > kMaxBatch || batch.num_tokens() != n ||
      batch.logits_rows.size() != static_cast<std::size_t>(n))
    return 0;
  for (std::int32_t s = 0; s < n; ++s)
    if (batch.query_start[s] != s || batch.logits_rows[s] != s) return 0;
  return bucket_for(n);
}

std::int32_t DecodeGraphs::bucket_for(std::int32_t seqs) {
  return seqs <= 8 ? static_cast<std::int32_t>(std::bit_ceil(static_cast<std::uint32_t>(seqs)))
                   : (seqs + 7) / 8 * 8;
}

void DecodeGraphs::pad(const Batch& batch, std::int32_t seqs, std::int32_t width, Batch& padded) {
  const std::int32_t n = batch.num_seqs();
  const auto count = static_cast<std::size_t>(seqs);
  padded.token_ids.assign(batch.token_ids.begin(), batch.token_ids.end());
  padded.token_ids.resize(count, 0);
  padded.positions.assign(batch.positions.begin(), batch.positions.end());
  padded.positions.resize(count, 0);
  padded.slot_mapping.assign(batch.slot_mapping.begin(), batch.slot_mapping.end());
  padded.slot_mapping.resize(count, -1);
  padded.query_start.resize(count + 1);
  std::iota(padded.query_start.begin(), padded.query_start.end(), 0);
  padded.context_lens.assign(batch.context_lens.begin(), batch.context_lens.end());
  padded.context_lens.resize(count, 1);
  padded.max_blocks_per_seq = width;
  padded.block_tables.assign(count * static_cast<std::size_t>(width), -1);
  for (std::int32_t s = 0; s < seqs; ++s) {
    const auto row = padded.block_tables.begin() + static_cast<std::ptrdiff_t>(s) * width;
    if (s < n) {
      const auto from = batch.block_tables.begin() +
                        static_cast<std::ptrdiff_t>(s) * batch.max_blocks_per_seq;
      std::copy(from, from + batch.max_blocks_per_seq, row);
    } else {
      *row = 0;
    }
  }
  padded.logits_rows.resize(count);
  std::iota(padded.logits_rows.begin(), padded.logits_rows.end(), 0);
}

const DecodeGraphs::Graph& DecodeGraphs::graph_for(std::int32_t seqs, std::int32_t width,
                                                   const StepForward& forward, bool fed) {
  auto it = graphs_.lower_bound({seqs, 0});
  const bool bucket_seen = it != graphs_.end() && it->first.first == seqs;
  bool fresh = false;
  std::tie(it, fresh) = graphs_.try_emplace({seqs, width});
  if (fresh) {
    try {
      it->second = capture(forward, !bucket_seen, fed);  // its ops check the padded batch
    } catch (...) {
      graphs_.erase(it);
      throw;
    }
  }
  return it->second;
}

void DecodeGraphs::prepare(std::int32_t max_seqs, std::int32_t max_blocks_per_seq,
                           const StepForward& forward) {
  // Each a step of pad rows only (one token, no K/V written).
  const Batch none;
  const std::int32_t last = bucket_for(std::clamp(max_seqs, 1, kMaxBatch));
  const auto widest = static_cast<std::int32_t>(
      std::bit_ceil(static_cast<std::uint32_t>(std::max(max_blocks_per_seq, 1))));
  for (std::int32_t seqs = 1; seqs <= last; seqs = seqs < 8 ? seqs * 2 : seqs + 8)
    for (std::int32_t width = 1; width <= widest; width *= 2) {
      pad(none, seqs, width, padded_);
      graph_for(seqs, width, forward, false);
    }
}

Tensor DecodeGraphs::run(const Batch& batch, const StepForward& forward, bool fed) {
  const std::int32_t seqs = bucket_of(batch);
  const auto width = static_cast<std::int32_t>(
      std::bit_ceil(static_cast<std::uint32_t>(std::max(batch.max_blocks_per_seq, 1))));
  pad(batch, seqs, width, padded_);
  const auto known = graphs_.find({seqs, width});
  if (known != graphs_.end()) ops_.check_batch(batch, known->second.checked, fed);
  const Graph& g =
      known != graphs_.end() ? known->second : graph_for(seqs, width, forward, fed);
  uploader_.upload(padded_, g.layout, g.inputs.get());
  MV_CUDA_CHECK(cudaGraphLaunch(g.exec.get(), ops_.stream()));
  ++replays_;
  // The real sequences' rows come first; the arena keeps the memory.
  return {std::shared_ptr<void>(arena_, g.logits), g.logits, DType::f32,
          {batch.num_seqs(), g.vocab}, Device::cuda};
}

DecodeGraphs::Graph DecodeGraphs::capture(const StepForward& forward, bool warm_up, bool fed) {
  Graph g;
  g.layout = BatchLayout::of(padded_);
  g.inputs = ops_.pool_->allocate(g.layout.bytes);
  uploader_.upload(padded_, g.layout, g.inputs.get());
  CudaOps::Step step;
  step.batch = &padded_;
  step.device = DeviceBatch::at(g.inputs.get(), g.layout);
  step.fed = fed;
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
  if (logits.dtype() != DType::f32 || logits.rank() != 2 || logits.dim(0) != padded_.num_seqs())
    throw Error("DecodeGraphs: the captured forward returned logits " +
                shape_string(logits.shape()) + " for " + std::to_string(padded_.num_seqs()) +
                " sequences");
  g.logits = logits.data();
  g.vocab = logits.dim(1);
  g.checked = step.checked;
  return g;
}

}  // namespace minivllm::cuda
