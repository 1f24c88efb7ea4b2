#pragma once
// The GPU sampler: samples the logits a CudaOps model computed, on the ops' stream, without
// bringing them to the host. Per call: the rows' settings and logit adjustments go up in one
// copy from pinned memory, one kernel samples every row (kernels/cuda/sampling.cuh), and the
// tokens with what logprobs need come back in one small copy. Log-probabilities are those of
// the raw logits, as the CPU sampler reports them: the chosen token's logit minus the row's
// logsumexp, its rank, and the top k, all computed on the GPU.
// Random rows draw one number from their rng per call, the seed of the row's draw: a row's token
// depends only on its logits, params and rng, never on the rest of the batch. The draws are not
// the CPU sampler's (same distribution, different random numbers).
#include <cstddef>

#include <cuda_runtime_api.h>

#include "backend/cuda_ops.hpp"
#include "backend/sampling_inputs.hpp"
#include "engine/device_sampler.hpp"

namespace minivllm {

class CudaSampler final : public DeviceSampler {
 public:
  // Samples on `ops`' device and stream; `ops` must outlive the sampler.
  explicit CudaSampler(CudaOps& ops);
  CudaSampler(const CudaSampler&) = delete;
  CudaSampler& operator=(const CudaSampler&) = delete;
  ~CudaSampler();

  std::vector<SampledToken> sample(const Tensor& logits,
                                   std::span<const SamplerRow> rows) override;

 private:
  // A pinned host buffer and a device buffer of the same size, grown as needed.
  class Staging {
   public:
    Staging() = default;
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    ~Staging();
    void reserve(std::size_t bytes);  // drops the contents when it grows
    char* host() const { return host_; }
    char* device() const { return device_; }

   private:
    char* host_ = nullptr;
    char* device_ = nullptr;
    std::size_t capacity_ = 0;
  };

  cudaStream_t stream_;
  SamplingInputs inputs_;
  Staging in_;   // rows, then adjustments
  Staging out_;  // SampledRows, then TopLogits
  void* workspace_ = nullptr;  // the kernel's, cuda::kSampleWorkspaceBytes, zeroed once
};

}  // namespace minivllm
