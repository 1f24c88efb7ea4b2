#include "actors/loaded_model_runner.hpp"

#include <algorithm>
#include <chrono>

#include <minivllm/error.hpp>

#include "backend/cpu_ops.hpp"
#include "backend/make_ops.hpp"
#include "backend/make_sampler.hpp"
#include "engine/backend_model_runner.hpp"
#include "log/log.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"

namespace minivllm {
namespace {

// Steps are readied at start-up for contexts up to this many tokens (or max_model_len):
// with small cache blocks, every block-table width up to a long max_model_len would be
// hundreds of CUDA graphs; longer contexts capture theirs on first use.
constexpr std::int64_t kPreparedContext = 4096;

// cache.num_blocks, or when 0 on a GPU what fits in the device memory left after the weights.
std::int64_t cache_blocks(const Config& config, const LoadedModel& model) {
  check_kv_cache_dtype(config, model.model->kv_cache_spec());
  if (config.cache.num_blocks > 0) {
    check_kv_cache_fits(model.model->kv_cache_spec(), config.cache.block_size,
                        kv_cache_dtype(config), config.cache.num_blocks, free_backend_memory(config),
                        config.runtime.backend == Backend::cuda ? "free device memory"
                                                                : "available host memory");
    return config.cache.num_blocks;
  }
  return kv_cache_blocks_for_memory(
      model.model->kv_cache_spec(), config.cache.block_size, kv_cache_dtype(config),
      free_backend_memory(config), config.cache.gpu_memory_utilization,
      activation_reserve_bytes(model.config, config.scheduler.max_num_batched_tokens,
                               config.scheduler.max_num_seqs),
      resolve_max_model_len(config, model.config));
}

class LoadedModelRunner final : public ModelRunner {
 public:
  LoadedModelRunner(const Config& config, int device, const TensorParallelGroup* group, int rank)
      : plugins_(PluginRegistry::load(config.runtime.plugin_dirs)),
        ops_(make_ops(config, device, group, rank)),
        model_(load_model(plugins_, config.model.path, *ops_, rank, group ? group->ranks : 1)),
        num_blocks_(cache_blocks(config, model_)),
        runner_(*model_.model, *ops_,
                allocate_kv_cache(*ops_, model_.model->kv_cache_spec(), num_blocks_,
                                  config.cache.block_size, kv_cache_dtype(config)),
                static_cast<int>(model_.config.vocab_size), make_device_sampler(*ops_)) {
    const std::int64_t context = std::min(resolve_max_model_len(config, model_.config), kPreparedContext);
    const std::int64_t block_size = config.cache.block_size;
    const auto started = std::chrono::steady_clock::now();
    runner_.prepare({static_cast<std::int32_t>(config.scheduler.max_num_seqs),
                     static_cast<std::int32_t>(config.scheduler.max_num_batched_tokens),
                     static_cast<std::int32_t>((context + block_size - 1) / block_size),
                     static_cast<std::int32_t>(block_size)});
    if (config.runtime.backend == Backend::cuda)
      log_line(LogLevel::info,
               log_format("decode steps of up to %lld sequences and %lld tokens of context, and "
                          "prefill steps of up to %lld tokens, prepared in %.2f s (CUDA graphs %s)",
                          static_cast<long long>(config.scheduler.max_num_seqs),
                          static_cast<long long>(context),
                          static_cast<long long>(std::min(
                              config.runtime.cuda_graph_max_prefill_tokens,
                              config.scheduler.max_num_batched_tokens)),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                          config.runtime.cuda_graphs ? "captured" : "off"));
  }

  std::int64_t num_blocks() const { return num_blocks_; }
  int vocab_size() const override { return runner_.vocab_size(); }
  std::span<const float> execute(const Batch& batch) override { return runner_.execute(batch); }
  std::vector<SampledToken> execute_and_sample(const Batch& batch,
                                               std::span<const SamplerRow> rows) override {
    return runner_.execute_and_sample(batch, rows);
  }
  bool can_queue(std::size_t rows) const override { return runner_.can_queue(rows); }
  void queue_step(const Batch& batch, std::span<const SamplerRow> rows, bool fed) override {
    runner_.queue_step(batch, rows, fed);
  }
  bool step_ready() override { return runner_.step_ready(); }
  std::vector<SampledToken> collect_step() override { return runner_.collect_step(); }

 private:
  PluginRegistry plugins_;
  std::unique_ptr<Ops> ops_;  // before the model and runner, which use it: destroyed after
  LoadedModel model_;
  std::int64_t num_blocks_;
  BackendModelRunner runner_;
};

}  // namespace

LoadedRunner load_model_runner(const Config& config, int device, const TensorParallelGroup* group,
                               int rank) {
  if (config.runtime.backend == Backend::cpu && config.cache.num_blocks <= 0)
    throw Error("cache.num_blocks must be set (> 0) for the cpu backend");
  auto runner = std::make_unique<LoadedModelRunner>(config, device, group, rank);
  const std::int64_t num_blocks = runner->num_blocks();
  return {std::move(runner), num_blocks};
}

std::vector<std::string> check_model_folder(const Config& config) {
  const PluginRegistry plugins = PluginRegistry::load(config.runtime.plugin_dirs);
  CpuOps ops;
  return load_model(plugins, config.model.path, ops).unused_tensors;
}

}  // namespace minivllm
