#include "backend/cpu_ops.hpp"

#include <cstring>
#include <new>
#include <string>

#include <minivllm/error.hpp>
#include <minivllm/kv_cache.hpp>

#include "backend/batch_checks.hpp"
#include "backend/require.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/attention_inputs.hpp"
#include "kernels/cpu/bias.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/norm.hpp"

namespace minivllm {

namespace {

// Under AddressSanitizer every buffer comes from operator new, whose redzones catch overruns
// that a pooled mapping would not.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooled = false;
#else
constexpr bool kPooled = true;
#endif

#define REQUIRE(ok, op, what) MV_REQUIRE(ok, std::string("CpuOps::") + (op), what)

// A host tensor of f32 activations, [rows, features].
void require_matrix(const Tensor& t, const std::string& op, const char* name) {
  REQUIRE(t.device() == Device::cpu, op, std::string(name) + " is not on the CPU");
  REQUIRE(t.dtype() == DType::f32 && t.rank() == 2, op,
          std::string(name) + " must be a 2-d f32 tensor, is " + std::string(dtype_name(t.dtype())) +
              " " + shape_string(t.shape()));
}

void require_weight(const Tensor& w, std::size_t rank, const std::string& op) {
  REQUIRE(w.device() == Device::cpu && w.rank() == rank &&
              (w.dtype() == DType::bf16 || w.dtype() == DType::f32),
          op, "weight must be a " + std::to_string(rank) + "-d bf16/f32 CPU tensor, is " +
                  std::string(dtype_name(w.dtype())) + " " + shape_string(w.shape()));
}

// A cache [num_blocks, block_size, kv_heads, head_dim], checked to be f32 or fp8_e4m3 (codes and
// scales: kv_cache.hpp), as the kernels see it.
cpu::CacheRows require_cache(const Tensor& cache, const std::string& op) {
  REQUIRE(cache.device() == Device::cpu &&
              (cache.dtype() == DType::f32 || cache.dtype() == DType::fp8_e4m3) &&
              cache.rank() == 4,
          op, "KV cache must be a 4-d f32 or fp8_e4m3 tensor, is " +
                  std::string(dtype_name(cache.dtype())) + " " + shape_string(cache.shape()));
  return {cache.data(), cache.dtype() == DType::fp8_e4m3 ? kv_cache_scales(cache) : nullptr,
          cache.dim(1)};
}

}  // namespace

std::shared_ptr<HostPool> CpuOps::make_pool() { return kPooled ? HostPool::create() : nullptr; }

CpuOps::CpuOps(std::shared_ptr<HostCollectives> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  if (group_ != nullptr && (rank < 0 || rank >= group_->ranks()))
    throw Error("CpuOps: rank " + std::to_string(rank) + " outside a group of " +
                std::to_string(group_->ranks()));
}

CpuOps::~CpuOps() {
  if (group_ != nullptr)
    group_->close("tensor-parallel rank " + std::to_string(rank_) + " is gone");
}

std::unique_ptr<StepRunner> CpuOps::make_step_runner(StepForward forward) {
  if (group_ == nullptr) return Ops::make_step_runner(std::move(forward));
  struct GroupStep final : StepRunner {
    GroupStep(StepForward f, HostCollectives& g, int r) : forward(std::move(f)), group(g), rank(r) {}
    Tensor run(const Batch& batch) override {
      group.begin_step();
      try {
        return forward(batch);
      } catch (const std::exception& e) {
        group.abort("tensor-parallel rank " + std::to_string(rank) + " failed: " + e.what());
        throw;
      }
    }
    StepForward forward;
    HostCollectives& group;
    int rank;
  };
  return std::make_unique<GroupStep>(std::move(forward), *group_, rank_);
}

Tensor CpuOps::empty(const Shape& shape, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (kPooled && bytes >= HostPool::kMinBytes) {
    std::shared_ptr<void> owner = pool_->allocate(bytes);  // page-aligned
    void* p = owner.get();
    return {std::move(owner), p, dtype, shape, Device::cpu};
  }
  // 64-byte aligned so rows vectorize well; freed with the matching aligned delete.
  void* p = ::operator new[](bytes == 0 ? 1 : bytes, std::align_val_t{64});
  std::shared_ptr<void> owner(p, [](void* q) { ::operator delete[](q, std::align_val_t{64}); });
  return {std::move(owner), p, dtype, shape, Device::cpu};
}

Tensor CpuOps::from_host(const void* data, DType dtype, const Shape& shape) {
  Tensor t = empty(shape, dtype);
  // An empty copy may come with a null source, which memcpy must not be given even for 0 bytes.
  if (t.nbytes() > 0) std::memcpy(t.data(), data, t.nbytes());
  return t;
}

void CpuOps::to_host(const Tensor& t, void* dst) {
  if (t.nbytes() > 0) std::memcpy(dst, t.data(), t.nbytes());
}

Tensor CpuOps::embedding(const Tensor& table, const Batch& batch, std::int64_t first_id,
                         std::int64_t vocab_size) {
  require_weight(table, 2, "embedding");
  check_vocab_run("CpuOps", first_id, table.dim(0), vocab_size);
  Tensor out = empty({batch.num_tokens(), table.dim(1)}, DType::f32);
  try {
    cpu::embedding(table.data(), table.dtype(), first_id, table.dim(0), vocab_size, table.dim(1),
                   batch.token_ids.data(), batch.num_tokens(), out.data_as<float>());
  } catch (const std::out_of_range& e) {
    throw Error(std::string("CpuOps::embedding: ") + e.what());
  }
  return out;
}

Tensor CpuOps::linear(const Tensor& x, const Tensor& weight) {
  require_matrix(x, "linear", "x");
  require_weight(weight, 2, "linear");
  REQUIRE(x.dim(1) == weight.dim(1), "linear",
          "x " + shape_string(x.shape()) + " does not match weight " + shape_string(weight.shape()));
  Tensor y = empty({x.dim(0), weight.dim(0)}, DType::f32);
  cpu::linear(x.data_as<float>(), weight.data(), weight.dtype(), y.data_as<float>(), x.dim(0),
              weight.dim(0), x.dim(1));
  return y;
}

void CpuOps::add_bias(Tensor& x, const Tensor& bias) {
  require_matrix(x, "add_bias", "x");
  require_weight(bias, 1, "add_bias");
  REQUIRE(bias.dim(0) == x.dim(1), "add_bias",
          "bias " + shape_string(bias.shape()) + " does not match x " + shape_string(x.shape()));
  cpu::add_bias(x.data_as<float>(), bias.data(), bias.dtype(), x.dim(0), x.dim(1));
}

Tensor CpuOps::rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  require_matrix(x, "rms_norm", "x");
  require_weight(weight, 1, "rms_norm");
  REQUIRE(weight.dim(0) == x.dim(1), "rms_norm", "weight does not match x");
  Tensor out = empty(x.shape(), DType::f32);
  cpu::rms_norm(x.data_as<float>(), weight.data(), weight.dtype(), out.data_as<float>(), x.dim(0),
                x.dim(1), eps);
  return out;
}

Tensor CpuOps::add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight, float eps) {
  require_matrix(x, "add_rms_norm", "x");
  require_matrix(residual, "add_rms_norm", "residual");
  require_weight(weight, 1, "add_rms_norm");
  REQUIRE(x.shape() == residual.shape() && weight.dim(0) == x.dim(1), "add_rms_norm",
          "x, residual and weight do not match");
  Tensor out = empty(x.shape(), DType::f32);
  cpu::add_rms_norm(x.data_as<float>(), residual.data_as<float>(), weight.data(), weight.dtype(),
                    out.data_as<float>(), x.dim(0), x.dim(1), eps);
  return out;
}

Tensor CpuOps::attention_inputs(const Tensor& qkv, const Tensor& q_norm, const Tensor& k_norm,
                                float eps, const Tensor& inv_freq, Tensor& key_cache,
                                Tensor& value_cache, const Batch& batch) {
  require_matrix(qkv, "attention_inputs", "qkv");
  const cpu::CacheRows keys = require_cache(key_cache, "attention_inputs");
  const cpu::CacheRows values = require_cache(value_cache, "attention_inputs");
  for (const Tensor* norm : {&q_norm, &k_norm})
    if (norm->defined()) require_weight(*norm, 1, "attention_inputs");
  const bool norms_match = q_norm.defined() == k_norm.defined() &&
                           (!q_norm.defined() || q_norm.dtype() == k_norm.dtype());
  REQUIRE(norms_match, "attention_inputs", "q_norm and k_norm come together, in one dtype");
  REQUIRE(inv_freq.device() == Device::cpu && inv_freq.dtype() == DType::f32, "attention_inputs",
          "inv_freq must be f32 on the CPU");
  const AttentionInputsShape shape = check_attention_inputs(
      "CpuOps", qkv, q_norm, k_norm, inv_freq, key_cache, value_cache, batch);
  Tensor q = empty({qkv.dim(0), shape.num_heads * shape.head_dim}, DType::f32);
  cpu::AttentionInputs args;
  args.qkv = qkv.data_as<float>();
  args.positions = batch.positions.data();
  args.slot_mapping = batch.slot_mapping.data();
  args.inv_freq = inv_freq.data_as<float>();
  args.q_norm_weight = q_norm.data();
  args.k_norm_weight = k_norm.data();
  if (q_norm.defined()) args.norm_dtype = q_norm.dtype();
  args.norm_eps = eps;
  args.num_tokens = qkv.dim(0);
  args.num_heads = shape.num_heads;
  args.num_kv_heads = shape.num_kv_heads;
  args.head_dim = shape.head_dim;
  args.q = q.data_as<float>();
  args.key_cache = keys;
  args.value_cache = values;
  args.num_slots = shape.num_slots;
  cpu::attention_inputs(args);  // the slots are checked: no out_of_range
  return q;
}

Tensor CpuOps::silu_and_mul(const Tensor& gate_up) {
  require_matrix(gate_up, "silu_and_mul", "gate_up");
  REQUIRE(gate_up.dim(1) % 2 == 0, "silu_and_mul", "gate_up width is odd");
  const std::int64_t width = gate_up.dim(1) / 2;
  Tensor out = empty({gate_up.dim(0), width}, DType::f32);
  cpu::silu_and_mul(gate_up.data_as<float>(), out.data_as<float>(), gate_up.dim(0), width);
  return out;
}

Tensor CpuOps::paged_attention(const Tensor& q, const Tensor& key_cache, const Tensor& value_cache,
                               const Batch& batch, float scale) {
  require_matrix(q, "paged_attention", "q");
  const cpu::CacheRows keys = require_cache(key_cache, "paged_attention");
  const cpu::CacheRows values = require_cache(value_cache, "paged_attention");
  const AttentionShape shape = check_paged_attention("CpuOps", q, key_cache, value_cache, batch);
  Tensor out = empty(q.shape(), DType::f32);
  cpu::PagedAttentionArgs args;
  args.q = q.data_as<float>();
  args.key_cache = keys.data;
  args.value_cache = values.data;
  args.key_scales = keys.scales;
  args.value_scales = values.scales;
  args.block_tables = batch.block_tables.data();
  args.query_start = batch.query_start.data();
  args.context_lens = batch.context_lens.data();
  args.num_seqs = batch.num_seqs();
  args.max_blocks_per_seq = batch.max_blocks_per_seq;
  args.num_blocks = key_cache.dim(0);
  args.block_size = key_cache.dim(1);
  args.num_heads = shape.num_heads;
  args.num_kv_heads = key_cache.dim(2);
  args.head_dim = key_cache.dim(3);
  args.scale = scale;
  args.out = out.data_as<float>();
  try {
    cpu::paged_attention(args);
  } catch (const std::invalid_argument& e) {
    throw Error(std::string("CpuOps::") + e.what());
  }
  return out;
}

Tensor CpuOps::gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) {
  require_matrix(x, "gather_rows", "x");
  const std::int64_t width = x.dim(1);
  Tensor out = empty({static_cast<std::int64_t>(rows.size()), width}, DType::f32);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    REQUIRE(rows[i] >= 0 && rows[i] < x.dim(0), "gather_rows",
            "row " + std::to_string(rows[i]) + " outside " + shape_string(x.shape()));
    std::memcpy(out.data_as<float>() + i * width, x.data_as<float>() + rows[i] * width,
                static_cast<std::size_t>(width) * sizeof(float));
  }
  return out;
}

void CpuOps::all_reduce(Tensor& x) {
  if (group_ == nullptr || group_->ranks() == 1) return;
  REQUIRE(x.device() == Device::cpu && x.dtype() == DType::f32, "all_reduce",
          "x must be an f32 CPU tensor, is " + std::string(dtype_name(x.dtype())) + " " +
              shape_string(x.shape()));
  group_->all_reduce(rank_, x.data_as<float>(), static_cast<std::size_t>(x.numel()));
}

Tensor CpuOps::all_gather(const Tensor& x) {
  if (group_ == nullptr || group_->ranks() == 1) return x;
  require_matrix(x, "all_gather", "x");
  Tensor out = empty({x.dim(0), x.dim(1) * group_->ranks()}, DType::f32);
  group_->all_gather(rank_, x.data_as<float>(), x.dim(0), x.dim(1), out.data_as<float>());
  return out;
}

}  // namespace minivllm
