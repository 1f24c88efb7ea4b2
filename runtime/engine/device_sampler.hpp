#pragma once
// A sampler for logits that stay where the model computed them (a GPU): only the settings go up
// and only the tokens (and log-probabilities) come back. Same results contract as the CPU
// sampler's sample_batch: each row independently, from its own rng stream.
#include <span>
#include <vector>

#include <minivllm/tensor.hpp>

#include "engine/cpu_sampler.hpp"

namespace minivllm {

class DeviceSampler {
 public:
  virtual ~DeviceSampler() = default;
  // logits: f32 [rows.size(), vocab] on the sampler's device; rows[i] samples row i (its
  // `logits` span is not used). Throws minivllm::Error on a mismatch or a device error.
  virtual std::vector<SampledToken> sample(const Tensor& logits,
                                           std::span<const SamplerRow> rows) = 0;
};

}  // namespace minivllm
