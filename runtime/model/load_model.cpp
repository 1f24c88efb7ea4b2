#include "model/load_model.hpp"

#include "checkpoint/config_json.hpp"
#include "checkpoint/safetensors.hpp"
#include "log/log.hpp"
#include "model/checkpoint_weights.hpp"

namespace minivllm {

LoadedModel load_model(const PluginRegistry& plugins, const std::filesystem::path& model_dir,
                       Ops& ops, int tp_rank, int tp_size) {
  const auto config_file = model_dir / "config.json";
  const std::unique_ptr<ConfigFields> fields = load_config_fields(config_file);
  LoadedModel loaded{model_config_from(*fields), nullptr};
  // Weights are copied to the backend while the model is built; the mapping closes after.
  const Checkpoint checkpoint = Checkpoint::open(model_dir);
  CheckpointWeights weights(checkpoint, ops, tp_rank, tp_size);
  loaded.model = plugins.create(loaded.config, *fields, config_file, weights, ops);
  loaded.unused_tensors = weights.unused();
  if (!loaded.unused_tensors.empty() && (tp_rank == 0))
    log_line(LogLevel::warn,
             log_format("%s: %zu checkpoint tensors are not used by the %s model (first: %s)",
                        model_dir.string().c_str(), loaded.unused_tensors.size(),
                        loaded.config.architectures.front().c_str(),
                        loaded.unused_tensors.front().c_str()));
  return loaded;
}

}  // namespace minivllm
