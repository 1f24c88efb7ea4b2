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
//   throw) and uploaded by each op that needs them: a few small copies per layer, simple and
//   correct; caching them per step is an optimization left for later.
// - to_host synchronizes the stream; every other op only queues work. The calling thread must
//   be the one CudaOps was created on or have the same device current.
#include <cstdint>
#include <memory>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <minivllm/ops.hpp>

#include "backend/device_pool.hpp"

namespace minivllm {

class CudaOps final : public Ops {
 public:
  // compute_dtype: bf16 or f32; device: a CUDA device index. Throws minivllm::Error otherwise.
  CudaOps(DType compute_dtype, int device = 0);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  // Whether this process sees at least one CUDA device (false, not an error, when it has none).
  static bool device_available();

  Device device() const override { return Device::cuda; }
  DType compute_dtype() const { return dtype_; }
  cudaStream_t stream() const { return stream_; }

  Tensor empty(const Shape& shape, DType dtype) override;
  Tensor from_host(const void* data, DType dtype, const Shape& shape) override;
  void to_host(const Tensor& t, void* dst) override;

  Tensor embedding(const Tensor& table, const Batch& batch) override;
  Tensor linear(const Tensor& x, const Tensor& weight) override;
  Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) override;
  Tensor add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight,
                      float eps) override;
  void head_rms_norm(Tensor& x, const Tensor& weight, float eps) override;
  void rotary_embedding(Tensor& q, Tensor& k, const Tensor& inv_freq,
                        const Batch& batch) override;
  Tensor silu_and_mul(const Tensor& gate, const Tensor& up) override;
  void write_kv(const Tensor& k, const Tensor& v, Tensor& key_cache, Tensor& value_cache,
                const Batch& batch) override;
  Tensor paged_attention(const Tensor& q, const Tensor& key_cache, const Tensor& value_cache,
                         const Batch& batch, float scale) override;
  Tensor gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) override;

 private:
  // A host array copied to the device, alive as long as `owner`.
  template <class T>
  struct DeviceArray {
    std::shared_ptr<void> owner;
    const T* data = nullptr;
  };
  template <class T>
  DeviceArray<T> upload(const std::vector<T>& host);
  Tensor convert(const Tensor& t, DType to);

  DType dtype_;
  int device_;
  std::shared_ptr<cuda::DevicePool> pool_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

}  // namespace minivllm
