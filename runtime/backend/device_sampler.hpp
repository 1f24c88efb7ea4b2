#pragma once
// A sampler for logits that stay where the model computed them (a GPU): only the settings go up
// and only the tokens (and log-probabilities) come back. Same results contract as the CPU
// sampler's sample_batch: each row independently, from its own rng stream.
//
// Sampling is queued: queue() returns once the work is on the device's stream and collect()
// brings the tokens back, so that the next step can be queued behind it before they arrive (a
// fed step: its token ids name the sampled rows, which stay on the device; cuda_step_runner.hpp).
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <minivllm/error.hpp>
#include <minivllm/tensor.hpp>

#include "backend/cpu_sampler.hpp"

namespace minivllm {

class DeviceSampler {
 public:
  // How many samplings may be queued and not yet collected.
  static constexpr int kMaxQueued = 2;

  virtual ~DeviceSampler() = default;
  // Queues the sampling of logits: f32 [rows.size(), vocab] on the sampler's device, which must
  // stay unchanged until the work queued before the next step's forward (stream order keeps it);
  // rows[i] samples row i (its `logits` span is not used; the rest is read before this returns).
  // At most kMaxQueued may wait for collect(). Throws minivllm::Error on a mismatch.
  virtual void queue(const Tensor& logits, std::span<const SamplerRow> rows) = 0;
  // Whether the oldest queued sampling's tokens are on the host (collect() would not wait).
  virtual bool ready() = 0;
  // The oldest queued sampling's tokens, waiting for them if needed. Throws on a device error.
  virtual std::vector<SampledToken> collect() = 0;
  // Whether a sampling of `rows` rows leaves its tokens on the device for a fed step.
  virtual bool feeds(std::size_t rows) const = 0;
  // Samplings queued and not collected yet.
  virtual int queued() const = 0;

  // queue() then collect(); only when nothing else is queued (collect() takes the oldest).
  std::vector<SampledToken> sample(const Tensor& logits, std::span<const SamplerRow> rows) {
    if (queued() != 0)
      throw Error("DeviceSampler::sample: " + std::to_string(queued()) +
                  " samplings still queued; collect them first");
    queue(logits, rows);
    return collect();
  }
};

}  // namespace minivllm
