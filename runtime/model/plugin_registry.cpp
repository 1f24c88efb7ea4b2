#include "model/plugin_registry.hpp"

#include <dlfcn.h>

#include <algorithm>

#include <minivllm/error.hpp>

namespace minivllm {

namespace fs = std::filesystem;

namespace {

// The plugin libraries in `dir` and in its direct subfolders, sorted for a stable order.
std::vector<fs::path> plugin_files(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw Error(dir.string() + ": plugin dir does not exist");
  std::vector<fs::path> files;
  auto collect = [&files](const fs::path& folder) {
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file() && entry.path().extension() == ".so") files.push_back(entry.path());
  };
  collect(dir);
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) collect(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

class Registrar final : public ModelRegistrar {
 public:
  explicit Registrar(std::vector<std::unique_ptr<ModelFamily>>& out) : out_(out) {}
  void add(std::unique_ptr<ModelFamily> family) override {
    if (family) out_.push_back(std::move(family));
  }

 private:
  std::vector<std::unique_ptr<ModelFamily>>& out_;
};

}  // namespace

PluginRegistry PluginRegistry::load(const std::vector<fs::path>& plugin_dirs) {
  PluginRegistry registry;
  registry.dirs_ = plugin_dirs;
  for (const auto& dir : plugin_dirs)
    for (const auto& file : plugin_files(dir)) registry.load_plugin(file);
  return registry;
}

void PluginRegistry::load_plugin(const fs::path& file) {
  // RTLD_LOCAL: each plugin's own copy of the building blocks stays private to it.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw Error(file.string() + ": cannot load plugin: " + dlerror());
  using Entry = const PluginInfo* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kPluginEntryPoint));
  if (entry == nullptr)
    throw Error(file.string() + ": not a minivllm plugin (no '" + kPluginEntryPoint +
                "' entry point)");
  const PluginInfo* info = entry();
  if (info == nullptr || info->abi_version != kPluginAbiVersion)
    throw Error(file.string() + ": plugin ABI version " +
                (info ? std::to_string(info->abi_version) : std::string("?")) +
                ", this runtime needs " + std::to_string(kPluginAbiVersion) + ": rebuild the plugin");
  std::vector<std::unique_ptr<ModelFamily>> added;
  Registrar registrar(added);
  info->register_models(registrar);
  for (auto& family : added) {
    for (const std::string& architecture : family->architectures()) {
      if (auto it = by_architecture_.find(architecture); it != by_architecture_.end())
        throw Error(file.string() + ": plugin '" + info->name + "' registers architecture " +
                    architecture + ", already registered by " + it->second.plugin.string());
      by_architecture_[architecture] = {family.get(), file};
    }
    families_.push_back(std::move(family));
  }
}

const ModelFamily& PluginRegistry::family(const ModelConfig& config,
                                          const fs::path& config_file) const {
  for (const auto& architecture : config.architectures) {
    auto it = by_architecture_.find(architecture);
    if (it == by_architecture_.end()) continue;
    const std::vector<std::string> types = it->second.family->model_types();
    if (std::find(types.begin(), types.end(), config.model_type) == types.end())
      throw Error(config_file.string() + ": field 'model_type': '" + config.model_type +
                  "' is not one the plugin for " + architecture + " (" +
                  it->second.plugin.string() + ") accepts (" + join(types) + ")");
    return *it->second.family;
  }
  std::vector<std::string> dirs;
  for (const auto& d : dirs_) dirs.push_back(d.string());
  throw Error(config_file.string() + ": no plugin provides architecture " +
              join(config.architectures) + " (plugins provide: " + join(architectures()) +
              "; plugin dirs: " + join(dirs) + ")");
}

std::unique_ptr<Model> PluginRegistry::create(const ModelConfig& config, const ConfigFields& fields,
                                              const fs::path& config_file, WeightLoader& weights,
                                              Ops& ops) const {
  const ModelFamily& f = family(config, config_file);
  f.check_config(config, fields);
  return f.create(ModelContext{config, fields, weights, ops});
}

std::vector<std::string> PluginRegistry::architectures() const {
  std::vector<std::string> names;
  for (const auto& [name, registered] : by_architecture_) names.push_back(name);
  return names;
}

fs::path PluginRegistry::plugin_of(const std::string& architecture) const {
  auto it = by_architecture_.find(architecture);
  return it == by_architecture_.end() ? fs::path{} : it->second.plugin;
}

}  // namespace minivllm
