#pragma once
// CUDA graphs of a model's forward for pure-decode steps, where launching a few hundred small
// kernels one by one costs more than running them. A step of n sequences is padded to a bucket
// (1, 2, 4, 8, then multiples of 8 up to 256 sequences) and its block tables to a power-of-two
// width; each (bucket, width) is captured once, by prepare() at start-up or else on first use,
// and replayed after. A graph keeps the addresses it was
// captured with, so:
// - its inputs are the padded batch's packed copy at a fixed device address of its own, which
//   each replay overwrites with one copy before launching;
// - every tensor the captured forward allocates comes from a GraphArena, which the graphs share
//   (they replay one at a time on CudaOps' stream);
// - the kernels' launch shapes depend only on the bucket and the width: the decode attention's
//   split plan reads max_blocks_per_seq * block_size, never the context lengths.
// A pad sequence has one token (id 0 at position 0, no KV slot) attending to slot 0 of block 0,
// so the padded step is a valid Batch that goes through the ops' host checks at capture, and its
// rows stay finite; their logits are dropped. A replay checks the real batch against what the
// captured step's ops checked.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include <minivllm/ops.hpp>

#include "backend/batch_upload.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/graph_arena.hpp"

namespace minivllm::cuda {

class DecodeGraphs {
 public:
  static constexpr std::int32_t kMaxBatch = 256;

  // `ops` and `uploader` (on ops' stream) must outlive this.
  DecodeGraphs(CudaOps& ops, BatchUploader& uploader);

  // The bucket a pure-decode step goes to: every sequence has one new token and its logits row,
  // in order, and there are at most kMaxBatch; 0 for any other step.
  static std::int32_t bucket_of(const Batch& batch);
  static std::int32_t bucket_for(std::int32_t seqs);  // of a pure-decode step of `seqs`, <= kMaxBatch
  // `batch` padded to `seqs` sequences and `width` block-table columns (see above) into `padded`.
  static void pad(const Batch& batch, std::int32_t seqs, std::int32_t width, Batch& padded);

  // The logits of `batch` (bucket_of(batch) > 0) by replaying its bucket's graph, captured from
  // `forward` first if new. Valid until the next run. fed: a fed step (CudaOps::sampled_tokens).
  Tensor run(const Batch& batch, const StepForward& forward, bool fed);
  // Captures the graphs of every bucket up to max_seqs' (at most kMaxBatch) at every width up to
  // max_blocks_per_seq's.
  void prepare(std::int32_t max_seqs, std::int32_t max_blocks_per_seq, const StepForward& forward);

  std::size_t num_graphs() const { return graphs_.size(); }
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
    void* logits = nullptr;        // [bucket, vocab] f32 in the arena
    std::int64_t vocab = 0;
    CudaOps::BatchBounds checked;
  };

  // The graph of padded_ (a bucket's worth of sequences at `width`), captured first if new.
  const Graph& graph_for(std::int32_t seqs, std::int32_t width, const StepForward& forward,
                         bool fed);
  // Captures forward(padded_), after a warm-up run of it if `warm_up` (the bucket's first graph:
  // later widths share its shapes but the attention's).
  Graph capture(const StepForward& forward, bool warm_up, bool fed);

  CudaOps& ops_;
  BatchUploader& uploader_;
  std::shared_ptr<GraphArena> arena_;
  std::map<std::pair<std::int32_t, std::int32_t>, Graph> graphs_;  // (bucket, width) -> graph
  Batch padded_;  // the step being run, padded (kept to reuse its vectors' memory)
  std::size_t replays_ = 0;
};

}  // namespace minivllm::cuda
