#pragma once
// The ops a model runs, implemented by a backend (CPU reference now, CUDA later). Plugins reach the
// shared kernels only through this interface: virtual calls, so a plugin needs no link-time symbol
// from the runtime. Activations are [num_tokens, features] in the backend's compute dtype (f32 on
// the CPU; bf16 or f32 on CUDA) unless stated; weights are what the WeightLoader returned. Logits
// come out f32 on every backend (gather_rows returns f32 and linear keeps its input's dtype).
// Shapes are checked; a mismatch throws minivllm::Error.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <minivllm/batch.hpp>
#include <minivllm/error.hpp>
#include <minivllm/tensor.hpp>

namespace minivllm {

// One forward step of one model over its KV cache: the model's forward(batch, kv).
using StepForward = std::function<Tensor(const Batch& batch)>;

// The most a runner's steps hold (StepRunner::prepare).
struct StepLimits {
  std::int32_t max_seqs = 0;            // sequences in a step
  std::int32_t max_tokens = 0;          // new tokens in a step
  std::int32_t max_blocks_per_seq = 0;  // block-table entries of a sequence worth readying
  std::int32_t block_size = 0;          // tokens per KV-cache block
};

// Runs a StepForward step after step (Ops::make_step_runner): the runtime's way into a step, so
// that a backend can treat the step as a unit (stage the batch once for all its ops, replay a
// captured step) while the model only ever sees Ops.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // The forward's logits for `batch`, valid until the next run. `batch` must not change while
  // the call runs.
  virtual Tensor run(const Batch& batch) = 0;
  // Readies the steps `limits` allows, so that none pays a first-use cost in the middle of
  // serving (a CUDA runner captures its graphs). This default has nothing to ready.
  virtual void prepare(const StepLimits& /*limits*/) {}
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual Device device() const = 0;

  // Memory on the backend's device.
  virtual Tensor empty(const Shape& shape, DType dtype) = 0;
  virtual Tensor from_host(const void* data, DType dtype, const Shape& shape) = 0;
  virtual void to_host(const Tensor& t, void* dst) = 0;  // t.nbytes() bytes
  // A zero-filled tensor (the KV cache). This default goes through a host buffer; a backend
  // with a faster way overrides it.
  virtual Tensor zeros(const Shape& shape, DType dtype) {
    const std::vector<std::byte> host(static_cast<std::size_t>(shape_numel(shape)) *
                                      dtype_size(dtype));
    return from_host(host.data(), dtype, shape);
  }

  // How the runtime runs steps of `forward` (one model over one KV cache; the runner keeps it).
  // This default calls forward as it is.
  virtual std::unique_ptr<StepRunner> make_step_runner(StepForward forward) {
    struct Direct final : StepRunner {
      explicit Direct(StepForward f) : forward(std::move(f)) {}
      Tensor run(const Batch& batch) override { return forward(batch); }
      StepForward forward;
    };
    return std::make_unique<Direct>(std::move(forward));
  }

  // table[batch.token_ids] -> [num_tokens, hidden]. table [rows, hidden] holds the embeddings
  // of token ids [first_id, first_id + rows) of a vocabulary of vocab_size ids (the whole table:
  // first_id 0, vocab_size rows). An id of the vocabulary outside that run gives a row of zeros
  // (a vocab-parallel shard: all_reduce over the ranks sums the one row that holds it); an id
  // outside [0, vocab_size) is an error.
  virtual Tensor embedding(const Tensor& table, const Batch& batch, std::int64_t first_id,
                           std::int64_t vocab_size) = 0;
  // x @ weight^T: x [m, in], weight [out, in] -> [m, out].
  virtual Tensor linear(const Tensor& x, const Tensor& weight) = 0;
  // x += bias, row by row, in place: x [m, out] (a linear's output), bias [out].
  virtual void add_bias(Tensor& x, const Tensor& bias) = 0;
  // x * rsqrt(mean(x^2) + eps) * weight, row by row; weight [features].
  virtual Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) = 0;
  // residual += x (in place), then returns rms_norm(residual): a pre-norm block's "add & norm".
  virtual Tensor add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight,
                              float eps) = 0;
  // An attention layer's inputs from its fused q/k/v projection qkv [num_tokens, (heads +
  // 2 * kv_heads) * head_dim] (a token's q heads, then k heads, then v heads; head_dim and
  // kv_heads from the cache): each q and k head RMS-normalized with q_norm / k_norm [head_dim]
  // (Qwen3; undefined tensors: no norm), then neox-style RoPE at batch.positions (inv_freq f32
  // [head_dim / 2]); k and v stored at batch.slot_mapping in one layer's cache (KvCacheView
  // layout; a negative slot is padding, not stored). Returns q [num_tokens, heads * head_dim].
  virtual Tensor attention_inputs(const Tensor& qkv, const Tensor& q_norm, const Tensor& k_norm,
                                  float eps, const Tensor& inv_freq, Tensor& key_cache,
                                  Tensor& value_cache, const Batch& batch) = 0;
  // silu(gate) * up, elementwise, from the fused gate/up projection: each row of gate_up
  // [num_tokens, 2 * intermediate] is gate then up -> [num_tokens, intermediate].
  virtual Tensor silu_and_mul(const Tensor& gate_up) = 0;
  // silu_and_mul(linear(x, gate_up_weight)): the gated MLP's activation from its input x [m, in]
  // and fused gate/up weight [2 * intermediate, in] -> [m, intermediate]. A backend may run the
  // two as one kernel (same result); this default composes them.
  virtual Tensor linear_silu_and_mul(const Tensor& x, const Tensor& gate_up_weight) {
    return silu_and_mul(linear(x, gate_up_weight));
  }
  // Causal attention of q [num_tokens, heads * head_dim] over the paged cache (prefill, chunked
  // prefill, prefix hits and decode alike; see Batch) -> [num_tokens, heads * head_dim].
  virtual Tensor paged_attention(const Tensor& q, const Tensor& key_cache,
                                 const Tensor& value_cache, const Batch& batch, float scale) = 0;
  // The rows of x [n, features] listed in `rows`, in order.
  virtual Tensor gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) = 0;

  // Collectives over the tensor-parallel group this backend was made in (one rank per backend;
  // every rank calls them in the same order with tensors of one shape and dtype). A backend
  // made alone is a group of one: all_reduce leaves x as is, all_gather returns x.
  // x summed element-wise over the ranks, in place; every rank gets the same sum.
  virtual void all_reduce(Tensor& x) = 0;
  // x [m, n] on every rank -> [m, n * ranks], rank r's x in columns [r * n, (r + 1) * n).
  virtual Tensor all_gather(const Tensor& x) = 0;
};

}  // namespace minivllm
