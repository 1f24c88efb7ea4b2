#include "backend/cuda_ops.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <minivllm/error.hpp>
#include <minivllm/kv_cache.hpp>

#include "backend/batch_checks.hpp"
#include "backend/cuda_check.hpp"
#include "backend/cuda_step_runner.hpp"
#include "backend/require.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/attention_inputs.cuh"
#include "kernels/cuda/bias.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rotary_angles.cuh"
#include "kernels/cuda/skinny_gemm.cuh"
#include "kernels/cuda/tile_gemm.cuh"

namespace minivllm {

namespace {

#define REQUIRE(ok, op, what) MV_REQUIRE(ok, std::string("CudaOps::") + (op), what)

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_string(t.shape());
}

// A device tensor of the given dtype and rank.
void require_device(const Tensor& t, DType dtype, std::size_t rank, const std::string& op,
                    const char* name) {
  REQUIRE(t.device() == Device::cuda, op, std::string(name) + " is not on the GPU");
  REQUIRE(t.dtype() == dtype && t.rank() == rank, op,
          std::string(name) + " must be a " + std::to_string(rank) + "-d " +
              std::string(dtype_name(dtype)) + " tensor, is " + describe(t));
}

// A KV cache [num_blocks, block_size, kv_heads, head_dim] on the GPU, of the compute dtype or
// fp8_e4m3 (with bf16 compute): its dtype and, for fp8, its scales (kv_cache.hpp).
struct DeviceCache {
  DType dtype;
  std::uint8_t* scales;
};
DeviceCache require_cache(const Tensor& cache, DType compute, const std::string& op,
                          const char* name) {
  const bool fp8 = cache.dtype() == DType::fp8_e4m3;
  require_device(cache, fp8 ? DType::fp8_e4m3 : compute, 4, op, name);
  REQUIRE(!fp8 || compute == DType::bf16, op,
          std::string(name) + " is F8_E4M3, which needs BF16 compute, not " +
              std::string(dtype_name(compute)));
  return {cache.dtype(), fp8 ? kv_cache_scales(cache) : nullptr};
}

// The key and value caches, of one dtype.
std::pair<DeviceCache, DeviceCache> require_caches(const Tensor& keys, const Tensor& values,
                                                   DType compute, const std::string& op) {
  const DeviceCache k = require_cache(keys, compute, op, "key cache");
  const DeviceCache v = require_cache(values, compute, op, "value cache");
  REQUIRE(k.dtype == v.dtype, op,
          "key and value caches differ in dtype: " + describe(keys) + ", " + describe(values));
  return {k, v};
}

cudaDataType_t blas_type(DType t) { return t == DType::f32 ? CUDA_R_32F : CUDA_R_16BF; }

// The flash prefill's split counters: one per query tile and head block of a launch that splits,
// at most two waves of blocks (two per multiprocessor).
constexpr std::size_t kPrefillSplitCounters = 4096;

// cuBLAS's recommended workspace on Hopper.
constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;

// A tensor of `shape` without memory, for the host-side shape checks.
Tensor shape_only(Shape shape) {
  return {nullptr, nullptr, DType::f32, std::move(shape), Device::cuda};
}

// Which kernel runs x [m, in] @ weight [out, in]^T (x already in the compute dtype), the plain
// projection or the gate/up one with silu_and_mul fused, by what beat the others on the H200
// (benchmarks gpu_skinny_gemm_bench and gpu_tile_gemm_bench; figures in kernels/cuda/
// skinny_gemm.md and tile_gemm.md), bf16 only:
// - the skinny GEMM at m = 1 on every Qwen3-0.6B shape (1.07x cuBLAS on the lm_head to 6x on
//   o_proj), and up to 8 rows while m x in x out <= 3 x 2^22 (its time grows about linearly in
//   m x W, the tile GEMM's stays at ~4.3-5.6 us up to 32 rows): the fused qkv up to 3 rows (at 2:
//   3.7 vs 4.3 us; at 4: 4.7 vs 4.3), o_proj up to 6 (at 4: 3.4 vs 4.3; at 8: 5.2 vs 4.3), down
//   up to 4 (4.8 vs 5.1; at 8: 7.3 vs 5.1), gate/up with silu_and_mul up to 2 (5.5 vs 5.6; at 4:
//   6.9 vs 5.6);
// - else the tile GEMM up to 32 rows: 1.06-1.13x cuBLAS on the fused qkv, 1.23-1.35x on o_proj
//   and down (split over in_features), ~1.02x on the lm_head; a decode layer's GEMMs with the
//   activation fused 19-20 vs 24-25 us. From ~48 rows cuBLAS is as fast or faster.
// - else cuBLAS.
enum class GemmKernel { skinny, tile, cublas };
GemmKernel gemm_kernel_for(DType compute_dtype, const Tensor& x, const Tensor& weight) {
  constexpr std::int64_t kSkinnyMaxRows = 8, kSkinnyMaxMultiplyAdds = 3 * (std::int64_t{1} << 22);
  constexpr std::int64_t kTileMaxRows = 32;
  if (compute_dtype != DType::bf16) return GemmKernel::cublas;
  const std::int64_t m = x.dim(0), out_features = weight.dim(0), in_features = x.dim(1);
  const bool skinny_wins =
      m == 1 || (m <= kSkinnyMaxRows && m * in_features * out_features <= kSkinnyMaxMultiplyAdds);
  if (skinny_wins && cuda::skinny_gemm_supports(in_features, x.data(), weight.data()))
    return GemmKernel::skinny;
  if (m <= kTileMaxRows && cuda::tile_gemm_supports(in_features, x.data(), weight.data()))
    return GemmKernel::tile;
  return GemmKernel::cublas;
}

// How many of the batch's sequences, from the first, have exactly one new token.
std::int32_t leading_decodes(const Batch& batch) {
  std::int32_t s = 0;
  while (s < batch.num_seqs() && batch.query_start[s + 1] - batch.query_start[s] == 1) ++s;
  return s;
}

}  // namespace

bool CudaOps::device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

CudaOps::CudaOps(DType compute_dtype, int device, bool cuda_graphs, const NcclRank* nccl,
                 std::int32_t prefill_graph_tokens)
    : dtype_(compute_dtype), device_(device), cuda_graphs_(cuda_graphs),
      prefill_graph_tokens_(prefill_graph_tokens) {
  REQUIRE(dtype_ == DType::bf16 || dtype_ == DType::f32, "CudaOps",
          "compute dtype must be BF16 or F32, is " + std::string(dtype_name(dtype_)));
  int count = 0;
  MV_CUDA_CHECK(cudaGetDeviceCount(&count));
  REQUIRE(device_ >= 0 && device_ < count, "CudaOps",
          "device " + std::to_string(device_) + " outside the " + std::to_string(count) +
              " visible CUDA devices");
  MV_CUDA_CHECK(cudaSetDevice(device_));
  pool_ = cuda::DevicePool::create(device_);
  allocator_ = pool_.get();
  blas_workspace_ = pool_->allocate(kBlasWorkspaceBytes);
  tile_gemm_workspace_ = pool_->allocate(cuda::kTileGemmWorkspaceBytes);
  MV_CUDA_CHECK(cudaMemset(tile_gemm_workspace_.get(), 0, cuda::kTileGemmWorkspaceBytes));
  prefill_split_counters_ = pool_->allocate(kPrefillSplitCounters * sizeof(int));
  MV_CUDA_CHECK(cudaMemset(prefill_split_counters_.get(), 0, kPrefillSplitCounters * sizeof(int)));
  sampled_tokens_ = pool_->allocate(kMaxFedRows * sizeof(std::int32_t));
  MV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    MV_CUDA_CHECK(cublasCreate(&blas_));
    MV_CUDA_CHECK(cublasSetStream(blas_, stream_));  // resets the workspace: set it after
    MV_CUDA_CHECK(cublasSetWorkspace(blas_, blas_workspace_.get(), kBlasWorkspaceBytes));
    if (nccl != nullptr) nccl_ = std::make_unique<NcclCommunicator>(*nccl);
  } catch (...) {
    if (blas_ != nullptr) cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaOps::~CudaOps() {
  // Tensors may outlive the ops (their blocks go back to the pool, which they keep alive); the
  // queued work must finish before the stream goes. No throwing from a destructor.
  cudaStreamSynchronize(stream_);
  nccl_.reset();
  cublasDestroy(blas_);
  cudaStreamDestroy(stream_);
}

Tensor CudaOps::empty(const Shape& shape, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  auto owner = allocator_->allocate(bytes);
  void* p = owner.get();
  return {std::move(owner), p, dtype, shape, Device::cuda};
}

Tensor CudaOps::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (t.nbytes() > 0) MV_CUDA_CHECK(cudaMemsetAsync(t.data(), 0, t.nbytes(), stream_));
  return t;
}

std::unique_ptr<StepRunner> CudaOps::make_step_runner(StepForward forward) {
  return std::make_unique<cuda::CudaStepRunner>(*this, std::move(forward), cuda_graphs_,
                                                prefill_graph_tokens_);
}

CudaOps::StepScope::StepScope(CudaOps& ops, Step& step, cuda::DeviceAllocator& allocator)
    : ops_(ops), previous_step_(ops.step_), previous_allocator_(ops.allocator_) {
  ops.step_ = &step;
  ops.allocator_ = &allocator;
  // The step's ops compute its RoPE angles afresh in each scope: a capture that follows a warm-up
  // run of the same step must record the kernel that computes them.
  step.rotary_inv_freq = nullptr;
  step.rotary.reset();
}

CudaOps::StepScope::~StepScope() {
  ops_.step_ = previous_step_;
  ops_.allocator_ = previous_allocator_;
}

const cuda::DeviceBatch* CudaOps::staged(const Batch& batch) const {
  return step_ != nullptr && step_->batch == &batch ? &step_->device : nullptr;
}

template <class T>
const T* CudaOps::upload(const std::vector<T>& host, std::shared_ptr<void>& keep) {
  // A graph would read the host vector's address long after it is gone.
  REQUIRE(step_ == nullptr || !step_->capturing, "upload",
          "a captured step must take every batch array from the step's own Batch");
  keep = allocator_->allocate(host.size() * sizeof(T));
  // From pageable memory the copy returns once the data is staged: `host` may go right after.
  if (!host.empty())
    MV_CUDA_CHECK(cudaMemcpyAsync(keep.get(), host.data(), host.size() * sizeof(T),
                                  cudaMemcpyHostToDevice, stream_));
  return static_cast<const T*>(keep.get());
}

void CudaOps::check_token_ids(const Batch& batch, std::int64_t vocab, bool fed) const {
  const std::int64_t lowest = fed ? -sampled_rows_ : 0;
  for (const std::int32_t id : batch.token_ids)
    REQUIRE(id >= lowest && id < vocab, "embedding",
            "token id " + std::to_string(id) + " outside the vocabulary of " +
                std::to_string(vocab) +
                (fed ? " and the " + std::to_string(sampled_rows_) + " sampled rows" : ""));
}

void CudaOps::check_batch(const Batch& batch, const BatchBounds& bounds, bool fed) const {
  check_token_ids(batch, bounds.vocab, fed);
  const Tensor cache = shape_only(bounds.kv_cache);
  check_kv_slots("CudaOps", batch.num_tokens(), cache, cache, batch);
  check_paged_attention("CudaOps", shape_only({batch.num_tokens(), bounds.q_width}), cache, cache,
                        batch);
}

// t in another dtype (bf16 <-> f32) as a new tensor; t itself when it already is `to`.
Tensor CudaOps::convert(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  Tensor out = empty(t.shape(), to);
  if (t.numel() == 0) return out;
  if (to == DType::f32)
    MV_CUDA_CHECK(cuda::launch_bf16_to_f32(t.data_as<std::uint16_t>(), out.data_as<float>(),
                                           t.numel(), stream_));
  else
    MV_CUDA_CHECK(cuda::launch_f32_to_bf16(t.data_as<float>(), out.data_as<std::uint16_t>(),
                                           t.numel(), stream_));
  return out;
}

Tensor CudaOps::from_host(const void* data, DType dtype, const Shape& shape) {
  REQUIRE(dtype == DType::bf16 || dtype == DType::f32, "from_host",
          "only BF16 and F32 tensors are supported, got " + std::string(dtype_name(dtype)));
  Tensor t = empty(shape, dtype);
  if (t.nbytes() > 0)
    MV_CUDA_CHECK(cudaMemcpyAsync(t.data(), data, t.nbytes(), cudaMemcpyHostToDevice, stream_));
  // In f32 mode bf16 weights are widened once here, so every op runs on one storage dtype.
  return dtype == DType::bf16 && dtype_ == DType::f32 ? convert(t, DType::f32) : t;
}

void CudaOps::to_host(const Tensor& t, void* dst) {
  REQUIRE(t.device() == Device::cuda, "to_host", "tensor is not on the GPU");
  if (t.nbytes() > 0)
    MV_CUDA_CHECK(cudaMemcpyAsync(dst, t.data(), t.nbytes(), cudaMemcpyDeviceToHost, stream_));
  MV_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Tensor CudaOps::embedding(const Tensor& table, const Batch& batch, std::int64_t first_id,
                          std::int64_t vocab) {
  require_device(table, dtype_, 2, "embedding", "table");
  check_vocab_run("CudaOps", first_id, table.dim(0), vocab);
  const cuda::DeviceBatch* step = staged(batch);
  check_token_ids(batch, vocab, step != nullptr && step_->fed);
  if (step != nullptr) step_->checked.vocab = vocab;
  Tensor out = empty({batch.num_tokens(), table.dim(1)}, dtype_);
  if (batch.token_ids.empty()) return out;
  std::shared_ptr<void> keep;
  const std::int32_t* ids = step != nullptr ? step->token_ids : upload(batch.token_ids, keep);
  MV_CUDA_CHECK(cuda::launch_embedding(dtype_, table.data(), first_id, table.dim(0), vocab,
                                       table.dim(1), ids, sampled_tokens(), batch.num_tokens(),
                                       out.data(), stream_));
  return out;
}

Tensor CudaOps::linear(const Tensor& x, const Tensor& weight) {
  REQUIRE(x.device() == Device::cuda && x.rank() == 2 &&
              (x.dtype() == dtype_ || x.dtype() == DType::f32),
          "linear", "x must be a 2-d GPU tensor of the compute dtype or F32, is " + describe(x));
  require_device(weight, dtype_, 2, "linear", "weight");
  REQUIRE(x.dim(1) == weight.dim(1), "linear",
          "x " + shape_string(x.shape()) + " does not match weight " + shape_string(weight.shape()));
  const std::int64_t m = x.dim(0), out_features = weight.dim(0), in_features = x.dim(1);
  Tensor y = empty({m, out_features}, x.dtype());
  if (y.numel() == 0) return y;
  // An f32 x against bf16 weights (the logits): bf16 inputs, f32 accumulation and output.
  const Tensor a = convert(x, dtype_);
  switch (gemm_kernel_for(dtype_, a, weight)) {
    case GemmKernel::skinny:
      MV_CUDA_CHECK(cuda::launch_skinny_gemm(a.data(), weight.data(), y.dtype(), y.data(), m,
                                             out_features, in_features, stream_));
      return y;
    case GemmKernel::tile:
      MV_CUDA_CHECK(cuda::launch_tile_gemm(a.data(), weight.data(), y.dtype(), y.data(), m,
                                           out_features, in_features, tile_workspace(), stream_));
      return y;
    case GemmKernel::cublas: break;
  }
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major y[m, out] = x[m, in] @ W[out, in]^T is column-major y^T = W^T(op T) x^T.
  MV_CUDA_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out_features),
                             static_cast<int>(m), static_cast<int>(in_features), &alpha,
                             weight.data(), blas_type(dtype_), static_cast<int>(in_features),
                             a.data(), blas_type(dtype_), static_cast<int>(in_features), &beta,
                             y.data(), blas_type(y.dtype()), static_cast<int>(out_features),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return y;
}

void CudaOps::add_bias(Tensor& x, const Tensor& bias) {
  require_device(x, dtype_, 2, "add_bias", "x");
  require_device(bias, dtype_, 1, "add_bias", "bias");
  REQUIRE(bias.dim(0) == x.dim(1), "add_bias",
          "bias " + shape_string(bias.shape()) + " does not match x " + shape_string(x.shape()));
  if (x.numel() > 0)
    MV_CUDA_CHECK(cuda::launch_add_bias(dtype_, x.data(), bias.data(), x.dim(0), x.dim(1), stream_));
}

Tensor CudaOps::rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  require_device(x, dtype_, 2, "rms_norm", "x");
  require_device(weight, dtype_, 1, "rms_norm", "weight");
  REQUIRE(weight.dim(0) == x.dim(1), "rms_norm", "weight does not match x");
  Tensor out = empty(x.shape(), dtype_);
  if (x.numel() > 0)
    MV_CUDA_CHECK(cuda::launch_rms_norm(dtype_, x.data(), weight.data(), out.data(), x.dim(0),
                                        x.dim(1), eps, stream_));
  return out;
}

Tensor CudaOps::add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight, float eps) {
  require_device(x, dtype_, 2, "add_rms_norm", "x");
  require_device(residual, dtype_, 2, "add_rms_norm", "residual");
  require_device(weight, dtype_, 1, "add_rms_norm", "weight");
  REQUIRE(x.shape() == residual.shape() && weight.dim(0) == x.dim(1), "add_rms_norm",
          "x, residual and weight do not match");
  Tensor out = empty(x.shape(), dtype_);
  if (x.numel() > 0)
    MV_CUDA_CHECK(cuda::launch_add_rms_norm(dtype_, x.data(), residual.data(), weight.data(),
                                            out.data(), x.dim(0), x.dim(1), eps, stream_));
  return out;
}

Tensor CudaOps::attention_inputs(const Tensor& qkv, const Tensor& q_norm, const Tensor& k_norm,
                                 float eps, const Tensor& inv_freq, Tensor& key_cache,
                                 Tensor& value_cache, const Batch& batch) {
  require_device(qkv, dtype_, 2, "attention_inputs", "qkv");
  const auto [keys, values] = require_caches(key_cache, value_cache, dtype_, "attention_inputs");
  if (q_norm.defined()) require_device(q_norm, dtype_, 1, "attention_inputs", "q_norm");
  if (k_norm.defined()) require_device(k_norm, dtype_, 1, "attention_inputs", "k_norm");
  require_device(inv_freq, DType::f32, 1, "attention_inputs", "inv_freq");
  const AttentionInputsShape shape = check_attention_inputs(
      "CudaOps", qkv, q_norm, k_norm, inv_freq, key_cache, value_cache, batch);
  Tensor q = empty({qkv.dim(0), shape.num_heads * shape.head_dim}, dtype_);
  if (qkv.dim(0) == 0) return q;
  const cuda::DeviceBatch* step = staged(batch);
  std::shared_ptr<void> keep[3];
  cuda::AttentionInputsParams p;
  p.dtype = dtype_;
  p.kv_dtype = keys.dtype;
  p.key_scales = keys.scales;
  p.value_scales = values.scales;
  p.block_size = key_cache.dim(1);
  p.qkv = qkv.data();
  p.q = q.data();
  p.key_cache = key_cache.data();
  p.value_cache = value_cache.data();
  p.slot_mapping = step != nullptr ? step->slot_mapping : upload(batch.slot_mapping, keep[0]);
  const std::int32_t* positions =
      step != nullptr ? step->positions : upload(batch.positions, keep[1]);
  p.rotary = rotary_angles(inv_freq, positions, qkv.dim(0), step != nullptr, keep[2]);
  p.num_tokens = qkv.dim(0);
  p.num_heads = shape.num_heads;
  p.num_kv_heads = shape.num_kv_heads;
  p.head_dim = shape.head_dim;
  p.num_slots = shape.num_slots;
  p.q_norm_weight = q_norm.data();
  p.k_norm_weight = k_norm.data();
  p.norm_eps = eps;
  MV_CUDA_CHECK(cuda::launch_attention_inputs(p, stream_));
  return q;
}

const float* CudaOps::rotary_angles(const Tensor& inv_freq, const std::int32_t* positions,
                                   std::int64_t num_tokens, bool in_step,
                                   std::shared_ptr<void>& keep) {
  if (in_step && step_->rotary_inv_freq == inv_freq.data())
    return static_cast<const float*>(step_->rotary.get());
  std::shared_ptr<void> angles = allocator_->allocate(
      static_cast<std::size_t>(num_tokens * inv_freq.dim(0) * 2) * sizeof(float));
  MV_CUDA_CHECK(cuda::launch_rotary_angles(positions, inv_freq.data_as<float>(), num_tokens,
                                           inv_freq.dim(0), static_cast<float*>(angles.get()),
                                           stream_));
  const auto* table = static_cast<const float*>(angles.get());
  if (in_step) {
    step_->rotary_inv_freq = inv_freq.data();
    step_->rotary = std::move(angles);
  } else {
    keep = std::move(angles);
  }
  return table;
}

Tensor CudaOps::silu_and_mul(const Tensor& gate_up) {
  require_device(gate_up, dtype_, 2, "silu_and_mul", "gate_up");
  REQUIRE(gate_up.dim(1) % 2 == 0, "silu_and_mul", "gate_up width is odd");
  const std::int64_t width = gate_up.dim(1) / 2;
  Tensor out = empty({gate_up.dim(0), width}, dtype_);
  if (out.numel() > 0)
    MV_CUDA_CHECK(cuda::launch_silu_and_mul(dtype_, gate_up.data(), out.data(), gate_up.dim(0),
                                            width, stream_));
  return out;
}

Tensor CudaOps::linear_silu_and_mul(const Tensor& x, const Tensor& gate_up_weight) {
  require_device(x, dtype_, 2, "linear_silu_and_mul", "x");
  require_device(gate_up_weight, dtype_, 2, "linear_silu_and_mul", "gate_up_weight");
  REQUIRE(x.dim(1) == gate_up_weight.dim(1) && gate_up_weight.dim(0) % 2 == 0,
          "linear_silu_and_mul",
          "x " + shape_string(x.shape()) + " does not match gate_up_weight " +
              shape_string(gate_up_weight.shape()) + " (its rows must be gate then up)");
  const GemmKernel kernel = gemm_kernel_for(dtype_, x, gate_up_weight);
  if (kernel == GemmKernel::cublas) return Ops::linear_silu_and_mul(x, gate_up_weight);
  const std::int64_t width = gate_up_weight.dim(0) / 2;
  Tensor out = empty({x.dim(0), width}, dtype_);
  if (out.numel() == 0) return out;
  if (kernel == GemmKernel::skinny)
    MV_CUDA_CHECK(cuda::launch_skinny_gemm_silu_and_mul(x.data(), gate_up_weight.data(),
                                                        out.data(), x.dim(0), width, x.dim(1),
                                                        stream_));
  else
    MV_CUDA_CHECK(cuda::launch_tile_gemm_silu_and_mul(x.data(), gate_up_weight.data(),
                                                      out.data(), x.dim(0), width, x.dim(1),
                                                      tile_workspace(), stream_));
  return out;
}

Tensor CudaOps::paged_attention(const Tensor& q, const Tensor& key_cache,
                                const Tensor& value_cache, const Batch& batch, float scale) {
  require_device(q, dtype_, 2, "paged_attention", "q");
  const auto [keys, values] = require_caches(key_cache, value_cache, dtype_, "paged_attention");
  const AttentionShape shape = check_paged_attention("CudaOps", q, key_cache, value_cache, batch);
  const cuda::DeviceBatch* step = staged(batch);
  if (step != nullptr) step_->checked = {step_->checked.vocab, key_cache.shape(), q.dim(1)};
  Tensor out = empty(q.shape(), dtype_);
  if (q.numel() == 0) return out;
  std::shared_ptr<void> keep[3];
  cuda::PagedAttentionParams p;
  p.dtype = dtype_;
  p.kv_dtype = keys.dtype;
  p.key_scales = keys.scales;
  p.value_scales = values.scales;
  p.q = q.data();
  p.key_cache = key_cache.data();
  p.value_cache = value_cache.data();
  p.block_tables = step != nullptr ? step->block_tables : upload(batch.block_tables, keep[0]);
  p.query_start = step != nullptr ? step->query_start : upload(batch.query_start, keep[1]);
  p.context_lens = step != nullptr ? step->context_lens : upload(batch.context_lens, keep[2]);
  p.seq_order = step != nullptr ? step->decode_order : nullptr;  // over the whole batch
  p.total_context = step != nullptr ? step->context_total : nullptr;
  p.num_seqs = batch.num_seqs();
  p.max_query_len = std::max(shape.max_query_len, step != nullptr ? step_->max_query_len : 0);
  p.max_blocks_per_seq = batch.max_blocks_per_seq;
  p.num_blocks = key_cache.dim(0);
  p.block_size = key_cache.dim(1);
  p.num_heads = shape.num_heads;
  p.num_kv_heads = key_cache.dim(2);
  p.head_dim = key_cache.dim(3);
  p.scale = scale;
  p.out = out.data();
  // The leading one-token sequences through the decode kernel, the rest through the prefill
  // kernel from an offset into the per-sequence arrays (query_start holds absolute token rows).
  const std::int32_t decodes = leading_decodes(batch);
  if (decodes > 0) {
    cuda::PagedAttentionParams d = p;
    d.num_seqs = decodes;
    if (decodes < p.num_seqs) {  // these cover all the batch's sequences
      d.seq_order = nullptr;
      d.total_context = nullptr;
    }
    // The decode kernel's split-K partial results; back to the allocator in stream order.
    std::shared_ptr<void> workspace;
    if ((d.workspace_bytes = cuda::decode_attention_workspace_bytes(d)) > 0) {
      workspace = allocator_->allocate(d.workspace_bytes);
      d.workspace = workspace.get();
    }
    MV_CUDA_CHECK(cuda::launch_decode_attention(d, stream_));
  }
  if (decodes < p.num_seqs) {
    cuda::PagedAttentionParams r = p;
    r.num_seqs -= decodes;
    r.block_tables += static_cast<std::ptrdiff_t>(decodes) * batch.max_blocks_per_seq;
    r.query_start += decodes;
    r.context_lens += decodes;
    REQUIRE(cuda::prefill_attention_supported(r), "paged_attention",
            "prefill over an F8_E4M3 KV cache runs on the flash kernel only: a Hopper GPU, "
            "head_dim 64 or 128 (is " + std::to_string(p.head_dim) + ")");
    // The flash kernel's key splits (small launches): scratch back to the allocator in stream
    // order, counters fixed (each launch leaves them zeroed; the launcher splits nothing where
    // they are too few).
    std::shared_ptr<void> workspace;
    if ((r.workspace_bytes = cuda::prefill_attention_workspace_bytes(r)) > 0) {
      workspace = allocator_->allocate(r.workspace_bytes);
      r.workspace = workspace.get();
      r.split_counters = static_cast<int*>(prefill_split_counters_.get());
      r.split_counter_count = kPrefillSplitCounters;
    }
    MV_CUDA_CHECK(cuda::launch_prefill_attention(r, stream_));
  }
  return out;
}

Tensor CudaOps::gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) {
  require_device(x, dtype_, 2, "gather_rows", "x");
  for (const std::int32_t r : rows)
    REQUIRE(r >= 0 && r < x.dim(0), "gather_rows",
            "row " + std::to_string(r) + " outside " + shape_string(x.shape()));
  const auto n = static_cast<std::int64_t>(rows.size());
  Tensor out = empty({n, x.dim(1)}, dtype_);
  if (out.numel() > 0) {
    // The step's copy when these are its batch's logits rows (layers::logits passes them).
    const bool step_rows = step_ != nullptr && &rows == &step_->batch->logits_rows;
    std::shared_ptr<void> keep;
    const std::int32_t* ids = step_rows ? step_->device.logits_rows : upload(rows, keep);
    MV_CUDA_CHECK(cuda::launch_embedding(dtype_, x.data(), 0, x.dim(0), x.dim(0), x.dim(1), ids,
                                         nullptr, n, out.data(), stream_));
  }
  // f32 so that lm_head's GEMM writes f32 logits (see cuda_ops.hpp).
  return convert(out, DType::f32);
}

void CudaOps::all_reduce(Tensor& x) {
  if (nccl_ == nullptr) return;
  require_device(x, x.dtype() == DType::f32 ? DType::f32 : dtype_, x.rank(), "all_reduce", "x");
  if (x.numel() > 0)
    nccl_->all_reduce(x.data(), static_cast<std::size_t>(x.numel()), x.dtype(), stream_);
}

Tensor CudaOps::all_gather(const Tensor& x) {
  if (nccl_ == nullptr) return x;
  REQUIRE(x.device() == Device::cuda && x.rank() == 2 &&
              (x.dtype() == dtype_ || x.dtype() == DType::f32),
          "all_gather", "x must be a 2-d GPU tensor of the compute dtype or F32, is " + describe(x));
  const int ranks = nccl_->ranks();
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  Tensor out = empty({rows, cols * ranks}, x.dtype());
  if (x.numel() == 0) return out;
  // NCCL gathers whole buffers, rank after rank: [ranks][rows, cols]; each rank's block then
  // goes to its columns of the output.
  Tensor parts = empty({ranks * rows, cols}, x.dtype());
  nccl_->all_gather(x.data(), parts.data(), static_cast<std::size_t>(x.numel()), x.dtype(),
                    stream_);
  const std::size_t elem = dtype_size(x.dtype());
  const std::size_t width = static_cast<std::size_t>(cols) * elem;
  for (int r = 0; r < ranks; ++r)
    MV_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(out.data()) + r * width, width * ranks,
                                    static_cast<const char*>(parts.data()) + r * rows * width,
                                    width, width, static_cast<std::size_t>(rows),
                                    cudaMemcpyDeviceToDevice, stream_));
  return out;
}

}  // namespace minivllm
