#include "model/random_model.hpp"

#include "checkpoint/config_json.hpp"
#include "checkpoint/random_checkpoint.hpp"

namespace minivllm {

std::vector<CheckpointTensor> write_random_model(const PluginRegistry& plugins,
                                                 const std::filesystem::path& hf_config,
                                                 const std::filesystem::path& out_dir,
                                                 std::uint64_t seed,
                                                 const WriteProgress& progress) {
  const std::unique_ptr<ConfigFields> fields = load_config_fields(hf_config);
  const ModelConfig config = model_config_from(*fields);
  const ModelFamily& family = plugins.family(config, hf_config);
  family.check_config(config, *fields);
  std::vector<CheckpointTensor> tensors = family.checkpoint_tensors(config, *fields);
  write_random_checkpoint(hf_config, tensors, out_dir, seed, progress);
  return tensors;
}

}  // namespace minivllm
