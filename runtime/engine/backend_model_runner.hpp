#pragma once
// The ModelRunner of one process: a Model running on a backend (Ops) with its paged KV cache;
// logits come back to the host for the sampler.
#include <vector>

#include <minivllm/kv_cache.hpp>
#include <minivllm/model.hpp>
#include <minivllm/ops.hpp>

#include "engine/model_runner.hpp"

namespace minivllm {

class BackendModelRunner final : public ModelRunner {
 public:
  // `model` and `ops` must outlive the runner; `kv` must have the engine's num_blocks and
  // block_size (model/kv_cache_alloc.hpp allocates it).
  BackendModelRunner(Model& model, Ops& ops, KvCacheView kv, int vocab_size)
      : model_(model), ops_(ops), kv_(std::move(kv)), vocab_size_(vocab_size) {}

  int vocab_size() const override { return vocab_size_; }
  std::span<const float> execute(const Batch& batch) override;

 private:
  Model& model_;
  Ops& ops_;
  KvCacheView kv_;
  int vocab_size_;
  std::vector<float> logits_;
};

}  // namespace minivllm
