#pragma once
// CUDA graphs of a model's forward for the steps where launching a few hundred small kernels one
// by one costs more than running them: pure-decode steps, and small prefills (each prompt alone,
// where a 128-token step spends nearly all its time queuing launches). A step is padded to its
// shape (step_shapes.hpp: a bucket of sequences or of tokens, and a block-table width); each
// shape is captured once, by prepare() at start-up or else on first use, and replayed after. A
// graph keeps the addresses it was captured with, so:
// - its inputs are the padded batch's packed copy at a fixed device address of its own, which
//   each replay overwrites with one copy before launching;
// - every tensor the captured forward allocates comes from a GraphArena, which the graphs share
//   (they replay one at a time on CudaOps' stream);
// - the kernels' launch shapes depend only on the shape: the decode attention's split plan reads
//   max_blocks_per_seq * block_size, never the context lengths, and the prefill attention
//   launches for the shape's longest query (CudaOps::Step::max_query_len), its blocks past a
//   sequence's own query returning at once.
// The padded step is a valid Batch that goes through the ops' host checks at capture, and its pad
// rows stay finite; their logits are dropped. A replay checks the real batch against what the
// captured step's ops checked.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>

#include <cuda_runtime_api.h>

#include <minivllm/ops.hpp>

#include "backend/batch_upload.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/graph_arena.hpp"
#include "backend/step_shapes.hpp"

namespace minivllm::cuda {

class StepGraphs {
 public:
  // `ops` and `uploader` (on ops' stream) must outlive this. Prefill steps of up to
  // `max_prefill_tokens` tokens (at most kMaxPrefillGraphTokens; 0: none) are replayed too.
  StepGraphs(CudaOps& ops, BatchUploader& uploader, std::int32_t max_prefill_tokens);

  // The shape `batch` is replayed at, or none: it runs eagerly.
  std::optional<StepShape> shape_of(const Batch& batch) const;

  // The logits of `batch` (shape_of(batch) is `shape`) by replaying its shape's graph, captured
  // from `forward` first if new. Valid until the next run. fed: a fed step
  // (CudaOps::sampled_tokens).
  Tensor run(const Batch& batch, const StepShape& shape, const StepForward& forward, bool fed);
  // Captures the graphs of every decode bucket up to limits.max_seqs' (at most
  // kMaxDecodeGraphSeqs) at every width up to limits.max_blocks_per_seq's, and, at that widest
  // width (which prefill steps are padded to from then on), of one prompt with one logits row in
  // every prefill bucket that a step of up to limits.max_tokens (and the replayed maximum) tokens
  // pads to, while its pad-only capture fits the width. Other prefill shapes (2-4 sequences, no
  // logits row, wider tables) are captured on first use.
  void prepare(const StepLimits& limits, const StepForward& forward);

  std::size_t num_graphs() const { return graphs_.size(); }
  bool captured(const StepShape& shape) const { return graphs_.contains(shape); }
  std::size_t replays() const { return replays_; }
  std::size_t arena_bytes() const { return arena_->reserved_bytes(); }

 private:
  struct ExecDeleter {
    void operator()(cudaGraphExec_t exec) const { cudaGraphExecDestroy(exec); }
  };
  struct Graph {
    std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, ExecDeleter> exec;
    BatchLayout layout;
    std::shared_ptr<void> inputs;  // the padded batch's device copy the graph reads
    void* logits = nullptr;        // [logits_rows, vocab] f32 in the arena
    std::int64_t vocab = 0;
    CudaOps::BatchBounds checked;
  };

  // The graph of padded_ (a step of `shape`), captured first if new.
  const Graph& graph_for(const StepShape& shape, const StepForward& forward, bool fed);
  // Captures forward(padded_), after a warm-up run of it if `warm_up` (the first graph of its
  // sequence and token counts: other widths share its shapes but the attention's).
  Graph capture(const StepShape& shape, const StepForward& forward, bool warm_up, bool fed);

  CudaOps& ops_;
  BatchUploader& uploader_;
  std::int32_t max_prefill_tokens_;
  std::int32_t prefill_width_ = 1;  // the narrowest width prefill steps are padded to
  std::shared_ptr<GraphArena> arena_;
  std::map<StepShape, Graph> graphs_;
  Batch padded_;  // the step being run, padded (kept to reuse its vectors' memory)
  std::size_t replays_ = 0;
};

}  // namespace minivllm::cuda
