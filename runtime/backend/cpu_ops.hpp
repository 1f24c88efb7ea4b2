#pragma once
// The CPU reference backend: every op in fp32 on host memory (weights bf16 or f32), built on the
// kernels in kernels/cpu/. Slow but simple; the oracle for the CUDA backend.
#include <memory>

#include <minivllm/ops.hpp>

#include "backend/host_collectives.hpp"
#include "backend/host_pool.hpp"

namespace minivllm {

class CpuOps final : public Ops {
 public:
  // A group of one.
  CpuOps() = default;
  // Rank `rank` of `group`'s tensor-parallel ranks (each a thread with its own CpuOps).
  CpuOps(std::shared_ptr<HostCollectives> group, int rank);
  CpuOps(const CpuOps&) = delete;
  CpuOps& operator=(const CpuOps&) = delete;
  // Closes the group: the other ranks' steps fail rather than wait for this one.
  ~CpuOps() override;

  Device device() const override { return Device::cpu; }
  // Each step begins with every rank (HostCollectives::begin_step); a step that throws aborts
  // the others' collectives.
  std::unique_ptr<StepRunner> make_step_runner(StepForward forward) override;

  Tensor empty(const Shape& shape, DType dtype) override;
  Tensor from_host(const void* data, DType dtype, const Shape& shape) override;
  void to_host(const Tensor& t, void* dst) override;

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
  Tensor paged_attention(const Tensor& q, const Tensor& key_cache, const Tensor& value_cache,
                         const Batch& batch, float scale) override;
  Tensor gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) override;
  void all_reduce(Tensor& x) override;
  Tensor all_gather(const Tensor& x) override;

 private:
  // A pool, or null where buffers are not pooled (under AddressSanitizer).
  static std::shared_ptr<HostPool> make_pool();

  // Buffers of HostPool::kMinBytes and up (a step's logits, the KV cache, the weights).
  std::shared_ptr<HostPool> pool_ = make_pool();
  std::shared_ptr<HostCollectives> group_;  // null: a group of one
  int rank_ = 0;
};

}  // namespace minivllm
