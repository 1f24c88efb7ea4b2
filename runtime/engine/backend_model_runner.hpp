#pragma once
// The ModelRunner of one process: a Model running on a backend (Ops) with its paged KV cache;
// logits come back to the host for the sampler, or are sampled where they are by a
// DeviceSampler (backend/make_sampler.hpp gives the backend's, if it has one).
#include <memory>
#include <vector>

#include <minivllm/kv_cache.hpp>
#include <minivllm/model.hpp>
#include <minivllm/ops.hpp>

#include "backend/device_sampler.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

class BackendModelRunner final : public ModelRunner {
 public:
  // `model` and `ops` must outlive the runner; `kv` must have the engine's num_blocks and
  // block_size (model/kv_cache_alloc.hpp allocates it). Without a sampler, execute_and_sample
  // samples on the host.
  BackendModelRunner(Model& model, Ops& ops, KvCacheView kv, int vocab_size,
                     std::unique_ptr<DeviceSampler> sampler = nullptr)
      : model_(model), ops_(ops), kv_(std::move(kv)), vocab_size_(vocab_size),
        sampler_(std::move(sampler)),
        steps_(ops.make_step_runner(
            [this](const Batch& batch) { return model_.forward(batch, kv_); })) {}
  // steps_ calls back into this object.
  BackendModelRunner(const BackendModelRunner&) = delete;
  BackendModelRunner& operator=(const BackendModelRunner&) = delete;

  int vocab_size() const override { return vocab_size_; }
  std::span<const float> execute(const Batch& batch) override;
  std::vector<SampledToken> execute_and_sample(const Batch& batch,
                                               std::span<const SamplerRow> rows) override;
  // With a device sampler that leaves the tokens on the device (DeviceSampler::feeds).
  bool can_queue(std::size_t rows) const override { return sampler_ && sampler_->feeds(rows); }
  void queue_step(const Batch& batch, std::span<const SamplerRow> rows, bool fed) override;
  bool step_ready() override { return sampler_->ready(); }
  std::vector<SampledToken> collect_step() override { return sampler_->collect(); }
  // StepRunner::prepare of the backend's step runner.
  void prepare(const StepLimits& limits) { steps_->prepare(limits); }

 private:
  // The step's logits, checked, on the backend.
  Tensor forward(const Batch& batch);

  Model& model_;
  Ops& ops_;
  KvCacheView kv_;
  int vocab_size_;
  std::unique_ptr<DeviceSampler> sampler_;  // may be null
  std::unique_ptr<StepRunner> steps_;  // the backend's way of running model_ over kv_
  std::vector<float> logits_;
};

}  // namespace minivllm
