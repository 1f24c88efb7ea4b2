#include "backend/cuda_sampler.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <minivllm/error.hpp>

#include "backend/cuda_check.hpp"
#include "kernels/cuda/sampling.cuh"

namespace minivllm {

CudaSampler::CudaSampler(CudaOps& ops) : stream_(ops.stream()) {
  MV_CUDA_CHECK(cudaMalloc(&workspace_, cuda::kSampleWorkspaceBytes));
  MV_CUDA_CHECK(cudaMemsetAsync(workspace_, 0, cuda::kSampleWorkspaceBytes, stream_));
}

CudaSampler::~CudaSampler() { cudaFree(workspace_); }

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

std::vector<SampledToken> CudaSampler::sample(const Tensor& logits,
                                              std::span<const SamplerRow> rows) {
  const auto n = static_cast<std::int64_t>(rows.size());
  if (logits.device() != Device::cuda || logits.dtype() != DType::f32 || logits.rank() != 2 ||
      logits.dim(0) != n || logits.dim(1) <= 0)
    throw Error("CudaSampler: logits must be f32 [" + std::to_string(n) +
                ", vocab] on the GPU, are " + std::string(dtype_name(logits.dtype())) + " " +
                shape_string(logits.shape()));
  if (n == 0) return {};
  const int vocab = static_cast<int>(logits.dim(1));
  inputs_.build(rows, vocab);

  // Everything the kernel reads, in one upload. Both parts keep their alignment: the rows'
  // size is a multiple of 8, adjustments need 4.
  const auto& params = inputs_.rows();
  const auto& adjustments = inputs_.adjustments();
  const std::size_t params_bytes = params.size() * sizeof(cuda::SamplingRow);
  const std::size_t in_bytes = params_bytes + adjustments.size() * sizeof(cuda::LogitAdjustment);
  in_.reserve(in_bytes);
  std::memcpy(in_.host(), params.data(), params_bytes);
  if (!adjustments.empty())
    std::memcpy(in_.host() + params_bytes, adjustments.data(), in_bytes - params_bytes);
  MV_CUDA_CHECK(
      cudaMemcpyAsync(in_.device(), in_.host(), in_bytes, cudaMemcpyHostToDevice, stream_));

  const std::size_t sampled_bytes = rows.size() * sizeof(cuda::SampledRow);
  const std::size_t out_bytes =
      sampled_bytes + static_cast<std::size_t>(inputs_.num_top()) * sizeof(cuda::TopLogits);
  out_.reserve(out_bytes);
  MV_CUDA_CHECK(cuda::launch_sample_rows(
      logits.data_as<float>(), n, vocab,
      reinterpret_cast<const cuda::SamplingRow*>(in_.device()),
      adjustments.empty() ? nullptr
                          : reinterpret_cast<cuda::LogitAdjustment*>(in_.device() + params_bytes),
      reinterpret_cast<cuda::SampledRow*>(out_.device()),
      inputs_.num_top() == 0 ? nullptr
                             : reinterpret_cast<cuda::TopLogits*>(out_.device() + sampled_bytes),
      workspace_, stream_));
  MV_CUDA_CHECK(
      cudaMemcpyAsync(out_.host(), out_.device(), out_bytes, cudaMemcpyDeviceToHost, stream_));
  MV_CUDA_CHECK(cudaStreamSynchronize(stream_));

  const auto* sampled = reinterpret_cast<const cuda::SampledRow*>(out_.host());
  const auto* tops = reinterpret_cast<const cuda::TopLogits*>(out_.host() + sampled_bytes);
  std::vector<SampledToken> out(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const cuda::SampledRow& s = sampled[r];
    out[r].token = s.token;
    const std::optional<int> k = rows[r].params->logprobs;
    if (!k) continue;
    // As position_logprobs computes them: the raw logit minus the logsumexp, in double.
    auto logprob = [&](float logit) {
      return static_cast<float>(static_cast<double>(logit) - s.logsumexp);
    };
    PositionLogprobs& lp = out[r].logprobs.emplace();
    lp.chosen = {s.token, logprob(s.token_logit), s.rank};
    const int top = std::min({*k, vocab, cuda::kMaxTopLogprobs});
    const cuda::TopLogits* t = top > 0 ? &tops[params[r].top_slot] : nullptr;
    for (int i = 0; i < top; ++i) lp.top.push_back({t->ids[i], logprob(t->logits[i]), i + 1});
  }
  return out;
}

}  // namespace minivllm
