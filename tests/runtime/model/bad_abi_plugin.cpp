// A plugin built against a future plugin ABI: the registry must refuse it.
#include <minivllm/model.hpp>

namespace {
void register_nothing(minivllm::ModelRegistrar&) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const minivllm::PluginInfo* minivllm_plugin() {
  static const minivllm::PluginInfo info{minivllm::kPluginAbiVersion + 1, "bad_abi",
                                         &register_nothing};
  return &info;
}
