#pragma once
// Model plugins loaded at start: every shared library (*.so) in each of runtime.plugin_dirs and in
// the folders directly inside them (a build tree keeps each plugin in plugins/<name>/) is opened
// with dlopen, its ABI version checked, and its model families recorded by Hugging Face
// architecture. The runtime knows models only through these families.
// Plugins stay loaded for the life of the process, so models never outlive their code.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/model.hpp>

namespace minivllm {

class PluginRegistry {
 public:
  // Throws minivllm::Error naming the file for a plugin dir that does not exist, a library that
  // does not load, has no `minivllm_plugin` entry point or reports another ABI version, and for
  // an architecture two plugins register.
  static PluginRegistry load(const std::vector<std::filesystem::path>& plugin_dirs);

  // The family of the first of config.architectures a plugin registers, checked to accept
  // config.model_type; `config_file` names the config in errors (unknown architecture: lists
  // what the plugins provide).
  const ModelFamily& family(const ModelConfig& config,
                            const std::filesystem::path& config_file) const;
  // That family's model, after its check_config.
  std::unique_ptr<Model> create(const ModelConfig& config, const ConfigFields& fields,
                                const std::filesystem::path& config_file, WeightLoader& weights,
                                Ops& ops) const;

  std::vector<std::string> architectures() const;
  // The plugin file that registered `architecture`, or an empty path.
  std::filesystem::path plugin_of(const std::string& architecture) const;

 private:
  struct Registered {
    const ModelFamily* family = nullptr;
    std::filesystem::path plugin;
  };
  void load_plugin(const std::filesystem::path& file);

  std::vector<std::filesystem::path> dirs_;
  std::vector<std::shared_ptr<const ModelFamily>> families_;
  std::map<std::string, Registered, std::less<>> by_architecture_;
};

}  // namespace minivllm
