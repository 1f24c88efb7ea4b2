#include "actors/loaded_model_runner.hpp"

#include <minivllm/error.hpp>

#include "backend/cpu_ops.hpp"
#include "engine/backend_model_runner.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"

namespace minivllm {
namespace {

class LoadedModelRunner final : public ModelRunner {
 public:
  explicit LoadedModelRunner(const Config& config)
      : plugins_(PluginRegistry::load(config.runtime.plugin_dirs)),
        model_(load_model(plugins_, config.model.path, ops_)),
        runner_(*model_.model, ops_,
                allocate_kv_cache(ops_, model_.model->kv_cache_spec(), config.cache.num_blocks,
                                  config.cache.block_size),
                static_cast<int>(model_.config.vocab_size)) {}

  int vocab_size() const override { return runner_.vocab_size(); }
  std::span<const float> execute(const Batch& batch) override { return runner_.execute(batch); }

 private:
  PluginRegistry plugins_;
  CpuOps ops_;
  LoadedModel model_;
  BackendModelRunner runner_;
};

}  // namespace

std::unique_ptr<ModelRunner> load_model_runner(const Config& config) {
  if (config.runtime.backend != Backend::cpu)
    throw Error("runtime.backend = \"" + std::string(backend_name(config.runtime.backend)) +
                "\": the actor runtime runs the cpu backend only so far");
  if (config.cache.num_blocks <= 0)
    throw Error("cache.num_blocks must be set (> 0) for the cpu backend");
  return std::make_unique<LoadedModelRunner>(config);
}

}  // namespace minivllm
