#pragma once
// The CPU reference backend: every op in fp32 on host memory (weights bf16 or f32), built on the
// kernels in kernels/cpu/. Slow but simple; the oracle for the CUDA backend.
#include <minivllm/ops.hpp>

namespace minivllm {

class CpuOps final : public Ops {
 public:
  Device device() const override { return Device::cpu; }

  Tensor empty(const Shape& shape, DType dtype) override;
  Tensor from_host(const void* data, DType dtype, const Shape& shape) override;
  void to_host(const Tensor& t, void* dst) override;

  Tensor embedding(const Tensor& table, const Batch& batch) override;
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
};

}  // namespace minivllm
