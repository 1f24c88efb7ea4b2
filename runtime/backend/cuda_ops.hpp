#pragma once
// The CUDA backend: the ops of minivllm::Ops on one GPU, on the kernels in kernels/cuda/ and
// cuBLAS, all queued on one stream. Same semantics and shape checks as CpuOps, with these
// differences a caller sees:
// - Activations and weights are in the compute dtype (bf16 or f32; config model.dtype). from_host
//   widens bf16 uploads to f32 in f32 mode; f32 uploads stay f32 (RoPE's inv_freq must), so in
//   bf16 mode a weight must arrive as bf16. The KV cache must be allocated in the compute dtype.
// - gather_rows returns f32 rows, and linear of an f32 x computes in f32 with f32 output (the
//   weight may be bf16): layers::logits is lm_head(gather_rows(hidden)), so the logits come out
//   f32 as the Model contract asks, without a bf16 rounding of the logits.
// - The Batch's arrays are validated on the host (the kernels write NaN for bad input, never
//   throw). A step run through make_step_runner() copies the whole batch to the device once
//   (cuda_step_runner.hpp) and its ops read that copy; an op called with another batch (a
//   model's forward called directly) uploads what it needs itself.
// - paged_attention runs the batch's leading one-token sequences (the scheduler puts decodes
//   first) through the decode kernel and the rest through the prefill kernel.
// - With cuda_graphs, pure-decode steps of up to 256 sequences and prefill steps of up to
//   prefill_graph_tokens tokens replay CUDA graphs captured per bucket (step_graphs.hpp).
// - to_host synchronizes the stream; every other op only queues work. The calling thread must
//   be the one CudaOps was created on or have the same device current.
#include <cstdint>
#include <memory>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <minivllm/ops.hpp>

#include "backend/batch_upload.hpp"
#include "backend/device_pool.hpp"
#include "backend/nccl_communicator.hpp"
#include "backend/step_shapes.hpp"
#include "kernels/cuda/tile_gemm.cuh"

namespace minivllm {

namespace cuda {
class CudaStepRunner;
class StepGraphs;
}  // namespace cuda

class CudaOps final : public Ops {
 public:
  // compute_dtype: bf16 or f32; device: a CUDA device index. cuda_graphs: step runners replay
  // pure-decode steps, and prefill steps of up to prefill_graph_tokens tokens (0: none), as CUDA
  // graphs. nccl: this rank of a tensor-parallel group, whose collectives go through NCCL
  // (joined here: blocks until every rank joins); null, a group of one without NCCL. Throws
  // minivllm::Error on a bad dtype or device, or NCCL's errors.
  CudaOps(DType compute_dtype, int device = 0, bool cuda_graphs = false,
          const NcclRank* nccl = nullptr, std::int32_t prefill_graph_tokens = kMaxPrefillGraphTokens);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  // Whether this process sees at least one CUDA device (false, not an error, when it has none).
  static bool device_available();

  Device device() const override { return Device::cuda; }
  DType compute_dtype() const { return dtype_; }
  cudaStream_t stream() const { return stream_; }
  // Blocks the caching pool got from cudaMalloc so far (flat in a steady state).
  std::size_t device_allocations() const { return pool_->device_allocations(); }

  Tensor empty(const Shape& shape, DType dtype) override;
  Tensor from_host(const void* data, DType dtype, const Shape& shape) override;
  void to_host(const Tensor& t, void* dst) override;
  Tensor zeros(const Shape& shape, DType dtype) override;  // cudaMemsetAsync, no host buffer
  std::unique_ptr<StepRunner> make_step_runner(StepForward forward) override;

  Tensor embedding(const Tensor& table, const Batch& batch, std::int64_t first_id,
                   std::int64_t vocab_size) override;
  Tensor linear(const Tensor& x, const Tensor& weight) override;
  void add_bias(Tensor& x, const Tensor& bias) override;
  Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) override;
  Tensor add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight,
                      float eps) override;
  Tensor attention_inputs(const Tensor& qkv, const Tensor& q_norm, const Tensor& k_norm,
                          float eps, const Tensor& inv_freq, Tensor& key_cache,
                          Tensor& value_cache, const Batch& batch) override;
  Tensor silu_and_mul(const Tensor& gate_up) override;
  // One kernel (the skinny or the tile GEMM with silu_and_mul in its epilogue) up to 32 rows,
  // where it beats cuBLAS plus the activation's kernel; else the composition.
  Tensor linear_silu_and_mul(const Tensor& x, const Tensor& gate_up_weight) override;
  Tensor paged_attention(const Tensor& q, const Tensor& key_cache, const Tensor& value_cache,
                         const Batch& batch, float scale) override;
  Tensor gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) override;
  // NCCL's all-reduce and all-gather on the ops' stream (a graph captures them); without a
  // communicator, a group of one.
  void all_reduce(Tensor& x) override;
  Tensor all_gather(const Tensor& x) override;

  // Fed steps: a decode step queued before the step ahead of it has brought its tokens to the
  // host names them by row: token id -1 - r is the token the last sampler launch put in row r of
  // sampled_tokens(), a fixed device array (graphs capture its address) that the embedding reads.
  static constexpr std::int64_t kMaxFedRows = 16384;
  std::int32_t* sampled_tokens() const { return static_cast<std::int32_t*>(sampled_tokens_.get()); }
  // The sampler's launch filled rows [0, rows) of sampled_tokens(): a fed step may name those.
  void set_sampled_rows(std::int64_t rows) { sampled_rows_ = rows; }

 private:
  friend class cuda::CudaStepRunner;
  friend class cuda::StepGraphs;

  // What the ops of a step checked its batch against, so that a graph replay, which calls no op,
  // checks a new batch against the same (check_batch).
  struct BatchBounds {
    std::int64_t vocab = 0;  // embedding table rows
    Shape kv_cache;          // one layer's [num_blocks, block_size, kv_heads, head_dim]
    std::int64_t q_width = 0;
  };
  // The step a runner is running: ops given `batch` read its device copy.
  struct Step {
    const Batch* batch = nullptr;
    cuda::DeviceBatch device;
    bool capturing = false;  // into a CUDA graph: nothing may be copied from the host
    BatchBounds checked;
    bool fed = false;  // its token ids may name sampled_tokens()' rows
    // A captured step's bound on its sequences' new tokens, which the prefill attention launches
    // for when above the batch's own longest (step_graphs.hpp); 0: none.
    std::int64_t max_query_len = 0;
    // RoPE's angles of its tokens for the model's inv_freq, from its first attention_inputs
    // (every call of a step has its batch's tokens: check_attention_inputs).
    const void* rotary_inv_freq = nullptr;
    std::shared_ptr<void> rotary;
  };
  // Makes `step` the current step, and `allocator` where tensors come from, until destroyed.
  class StepScope {
   public:
    StepScope(CudaOps& ops, Step& step, cuda::DeviceAllocator& allocator);
    ~StepScope();
    StepScope(const StepScope&) = delete;
    StepScope& operator=(const StepScope&) = delete;

   private:
    CudaOps& ops_;
    Step* previous_step_;
    cuda::DeviceAllocator* previous_allocator_;
  };

  // The step's device copy when `batch` is the current step's, else null.
  const cuda::DeviceBatch* staged(const Batch& batch) const;
  // `host` copied to the device (for an op outside a step); `keep` holds the copy.
  template <class T>
  const T* upload(const std::vector<T>& host, std::shared_ptr<void>& keep);
  // fed: ids -1 - r name rows of sampled_tokens() (a fed step's).
  void check_token_ids(const Batch& batch, std::int64_t vocab, bool fed) const;
  // A replayed step's batch against what the captured step's ops checked.
  void check_batch(const Batch& batch, const BatchBounds& bounds, bool fed) const;
  Tensor convert(const Tensor& t, DType to);
  // The cosines and sines of the tokens' RoPE angles (rotary_angles.cuh): computed once a step
  // and kept in it; outside a step, for one call (`keep` holds them).
  const float* rotary_angles(const Tensor& inv_freq, const std::int32_t* positions,
                             std::int64_t num_tokens, bool in_step, std::shared_ptr<void>& keep);
  cuda::TileGemmWorkspace tile_workspace() const {
    return {tile_gemm_workspace_.get(), cuda::kTileGemmWorkspaceBytes};
  }

  DType dtype_;
  int device_;
  bool cuda_graphs_;
  std::int32_t prefill_graph_tokens_;
  std::shared_ptr<cuda::DevicePool> pool_;
  cuda::DeviceAllocator* allocator_;  // the pool, or a graph arena during a capture
  Step* step_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::shared_ptr<void> blas_workspace_;  // fixed, so that captured GEMMs allocate nothing
  std::shared_ptr<void> tile_gemm_workspace_;  // the tile GEMM's splits', zeroed, fixed too
  std::shared_ptr<void> sampled_tokens_;       // kMaxFedRows int32, fixed
  std::shared_ptr<void> prefill_split_counters_;  // the flash prefill's key splits', zeroed, fixed
  std::int64_t sampled_rows_ = 0;
  std::unique_ptr<NcclCommunicator> nccl_;  // null: a group of one
};

}  // namespace minivllm
