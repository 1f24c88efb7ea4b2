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
  explicit Registrar(std::vector<std::pair<std::string, ModelFactory>>& out) : out_(out) {}
  void add(std::string_view architecture, ModelFactory factory) override {
    out_.emplace_back(std::string(architecture), factory);
  }

 private:
  std::vector<std::pair<std::string, ModelFactory>>& out_;
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
  std::vector<std::pair<std::string, ModelFactory>> added;
  Registrar registrar(added);
  info->register_models(registrar);
  for (auto& [architecture, make] : added) {
    if (auto it = factories_.find(architecture); it != factories_.end())
      throw Error(file.string() + ": plugin '" + info->name + "' registers architecture " +
                  architecture + ", already registered by " + it->second.plugin.string());
    factories_[architecture] = {make, file};
  }
}

std::unique_ptr<Model> PluginRegistry::create(const ModelConfig& config,
                                              const fs::path& config_file,
                                              WeightLoader& weights, Ops& ops) const {
  for (const auto& architecture : config.architectures)
    if (auto it = factories_.find(architecture); it != factories_.end())
      return it->second.make(ModelContext{config, weights, ops});
  std::vector<std::string> dirs;
  for (const auto& d : dirs_) dirs.push_back(d.string());
  throw Error(config_file.string() + ": no plugin provides architecture " +
              join(config.architectures) + " (plugins provide: " + join(architectures()) +
              "; plugin dirs: " + join(dirs) + ")");
}

std::vector<std::string> PluginRegistry::architectures() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

fs::path PluginRegistry::plugin_of(const std::string& architecture) const {
  auto it = factories_.find(architecture);
  return it == factories_.end() ? fs::path{} : it->second.plugin;
}

}  // namespace minivllm
