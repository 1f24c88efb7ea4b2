#include "backend/cuda_sampler.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <minivllm/error.hpp>

#include "backend/cuda_check.hpp"
#include "kernels/cuda/sampling.cuh"

namespace minivllm {

CudaSampler::CudaSampler(CudaOps& ops) : ops_(ops), stream_(ops.stream()) {
  MV_CUDA_CHECK(cudaMalloc(&workspace_, cuda::kSampleWorkspaceBytes));
  MV_CUDA_CHECK(cudaMemsetAsync(workspace_, 0, cuda::kSampleWorkspaceBytes, stream_));
  for (Slot& slot : slots_)
    MV_CUDA_CHECK(cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming));
}

CudaSampler::~CudaSampler() {
  cudaStreamSynchronize(stream_);  // no queued sampling may still write into the slots
  for (Slot& slot : slots_) cudaEventDestroy(slot.copied);
  cudaFree(workspace_);
}

CudaSampler::Staging::~Staging() {
  cudaFreeHost(host_);
  cudaFree(device_);
}

void CudaSampler::Staging::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return;
  const std::size_t capacity = std::max(bytes, 2 * capacity_);
  MV_CUDA_CHECK(cudaFreeHost(host_));
  MV_CUDA_CHECK(cudaFree(device_));
  host_ = device_ = nullptr;
  capacity_ = 0;
  void* host = nullptr;
  MV_CUDA_CHECK(cudaMallocHost(&host, capacity));
  host_ = static_cast<char*>(host);
  void* device = nullptr;
  MV_CUDA_CHECK(cudaMalloc(&device, capacity));
  device_ = static_cast<char*>(device);
  capacity_ = capacity;
}

void CudaSampler::queue(const Tensor& logits, std::span<const SamplerRow> rows) {
  const auto n = static_cast<std::int64_t>(rows.size());
  if (logits.device() != Device::cuda || logits.dtype() != DType::f32 || logits.rank() != 2 ||
      logits.dim(0) != n || logits.dim(1) <= 0)
    throw Error("CudaSampler: logits must be f32 [" + std::to_string(n) +
                ", vocab] on the GPU, are " + std::string(dtype_name(logits.dtype())) + " " +
                shape_string(logits.shape()));
  if (queued_ == kMaxQueued)
    throw Error("CudaSampler: " + std::to_string(kMaxQueued) + " samplings already queued");
  // The slot's previous sampling was collected: its copies are done, its buffers free.
  Slot& slot = slots_[(oldest_ + queued_) % kMaxQueued];
  ++queued_;
  const int vocab = static_cast<int>(logits.dim(1));
  slot.top_logprobs.clear();
  for (const SamplerRow& row : rows) {
    const std::optional<int> k = row.params->logprobs;
    slot.top_logprobs.push_back(k ? std::min({*k, vocab, cuda::kMaxTopLogprobs}) : -1);
  }
  // A fed step names this sampling's rows; another has nothing to name.
  ops_.set_sampled_rows(feeds(rows.size()) ? n : 0);
  if (n == 0) {
    MV_CUDA_CHECK(cudaEventRecord(slot.copied, stream_));
    return;
  }
  slot.inputs.build(rows, vocab);

  // Everything the kernel reads, in one upload. Both parts keep their alignment: the rows'
  // size is a multiple of 8, adjustments need 4.
  const auto& params = slot.inputs.rows();
  const auto& adjustments = slot.inputs.adjustments();
  const std::size_t params_bytes = params.size() * sizeof(cuda::SamplingRow);
  const std::size_t in_bytes = params_bytes + adjustments.size() * sizeof(cuda::LogitAdjustment);
  slot.in.reserve(in_bytes);
  std::memcpy(slot.in.host(), params.data(), params_bytes);
  if (!adjustments.empty())
    std::memcpy(slot.in.host() + params_bytes, adjustments.data(), in_bytes - params_bytes);
  MV_CUDA_CHECK(cudaMemcpyAsync(slot.in.device(), slot.in.host(), in_bytes,
                                cudaMemcpyHostToDevice, stream_));

  const std::size_t sampled_bytes = rows.size() * sizeof(cuda::SampledRow);
  const std::size_t out_bytes =
      sampled_bytes + static_cast<std::size_t>(slot.inputs.num_top()) * sizeof(cuda::TopLogits);
  slot.out.reserve(out_bytes);
  MV_CUDA_CHECK(cuda::launch_sample_rows(
      logits.data_as<float>(), n, vocab,
      reinterpret_cast<const cuda::SamplingRow*>(slot.in.device()),
      adjustments.empty()
          ? nullptr
          : reinterpret_cast<cuda::LogitAdjustment*>(slot.in.device() + params_bytes),
      reinterpret_cast<cuda::SampledRow*>(slot.out.device()),
      feeds(rows.size()) ? ops_.sampled_tokens() : nullptr,
      slot.inputs.num_top() == 0
          ? nullptr
          : reinterpret_cast<cuda::TopLogits*>(slot.out.device() + sampled_bytes),
      workspace_, stream_));
  MV_CUDA_CHECK(cudaMemcpyAsync(slot.out.host(), slot.out.device(), out_bytes,
                                cudaMemcpyDeviceToHost, stream_));
  MV_CUDA_CHECK(cudaEventRecord(slot.copied, stream_));
}

bool CudaSampler::ready() {
  if (queued_ == 0) throw Error("CudaSampler: no sampling queued");
  const cudaError_t state = cudaEventQuery(slots_[oldest_].copied);
  if (state == cudaErrorNotReady) return false;
  MV_CUDA_CHECK(state);
  return true;
}

std::vector<SampledToken> CudaSampler::collect() {
  if (queued_ == 0) throw Error("CudaSampler: no sampling queued");
  Slot& slot = slots_[oldest_];
  oldest_ = (oldest_ + 1) % kMaxQueued;
  --queued_;
  MV_CUDA_CHECK(cudaEventSynchronize(slot.copied));

  const std::size_t n = slot.top_logprobs.size();
  const auto* sampled = reinterpret_cast<const cuda::SampledRow*>(slot.out.host());
  const auto* tops = reinterpret_cast<const cuda::TopLogits*>(
      slot.out.host() + n * sizeof(cuda::SampledRow));
  const auto& params = slot.inputs.rows();
  std::vector<SampledToken> out(n);
  for (std::size_t r = 0; r < n; ++r) {
    const cuda::SampledRow& s = sampled[r];
    out[r].token = s.token;
    const int top = slot.top_logprobs[r];
    if (top < 0) continue;
    // As position_logprobs computes them: the raw logit minus the logsumexp, in double.
    auto logprob = [&](float logit) {
      return static_cast<float>(static_cast<double>(logit) - s.logsumexp);
    };
    PositionLogprobs& lp = out[r].logprobs.emplace();
    lp.chosen = {s.token, logprob(s.token_logit), s.rank};
    const cuda::TopLogits* t = top > 0 ? &tops[params[r].top_slot] : nullptr;
    for (int i = 0; i < top; ++i) lp.top.push_back({t->ids[i], logprob(t->logits[i]), i + 1});
  }
  return out;
}

}  // namespace minivllm
