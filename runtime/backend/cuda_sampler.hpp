#pragma once
// The GPU sampler: samples the logits a CudaOps model computed, on the ops' stream, without
// bringing them to the host. Per sampling: the rows' settings and logit adjustments go up in one
// copy from pinned memory, one kernel samples every row (kernels/cuda/sampling.cuh) and also
// leaves the tokens in CudaOps::sampled_tokens() for a fed step, and the tokens with what
// logprobs need come back in one small copy. Log-probabilities are those of
// the raw logits, as the CPU sampler reports them: the chosen token's logit minus the row's
// logsumexp, its rank, and the top k, all computed on the GPU.
// Random rows draw one number from their rng per call, the seed of the row's draw: a row's token
// depends only on its logits, params and rng, never on the rest of the batch. The draws are not
// the CPU sampler's (same distribution, different random numbers).
#include <cstddef>

#include <cuda_runtime_api.h>

#include "backend/cuda_ops.hpp"
#include "backend/sampling_inputs.hpp"
#include "backend/device_sampler.hpp"

namespace minivllm {

class CudaSampler final : public DeviceSampler {
 public:
  // Samples on `ops`' device and stream; `ops` must outlive the sampler.
  explicit CudaSampler(CudaOps& ops);
  CudaSampler(const CudaSampler&) = delete;
  CudaSampler& operator=(const CudaSampler&) = delete;
  ~CudaSampler();

  void queue(const Tensor& logits, std::span<const SamplerRow> rows) override;
  bool ready() override;
  std::vector<SampledToken> collect() override;
  bool feeds(std::size_t rows) const override { return rows <= CudaOps::kMaxFedRows; }
  int queued() const override { return queued_; }

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

  // One queued sampling: its own buffers, so that queueing the next one overwrites nothing the
  // device or collect() still reads.
  struct Slot {
    SamplingInputs inputs;
    Staging in;   // rows, then adjustments
    Staging out;  // SampledRows, then TopLogits
    std::vector<int> top_logprobs;  // per row: how many top logprobs, -1 for no logprobs
    cudaEvent_t copied = nullptr;  // the results are on the host
  };

  CudaOps& ops_;
  cudaStream_t stream_;
  Slot slots_[kMaxQueued];
  int oldest_ = 0;  // the slot collect() reads next
  int queued_ = 0;
  void* workspace_ = nullptr;  // the kernel's, cuda::kSampleWorkspaceBytes, zeroed once
};

}  // namespace minivllm
