#pragma once
// A model as the runtime drives it, and the plugin API that registers model families.
//
// A plugin is a shared library exporting one C function, `minivllm_plugin`, that returns a
// PluginInfo: the ABI version it was built against and a function registering factories by
// Hugging Face architecture name. Define it with MINIVLLM_PLUGIN:
//
//   MINIVLLM_PLUGIN("qwen3", registrar) { registrar.add("Qwen3ForCausalLM", &make_qwen3); }
#include <cstdint>
#include <memory>
#include <string_view>

#include <minivllm/batch.hpp>
#include <minivllm/kv_cache.hpp>
#include <minivllm/model_config.hpp>
#include <minivllm/ops.hpp>
#include <minivllm/tensor.hpp>
#include <minivllm/weights.hpp>

namespace minivllm {

class Model {
 public:
  virtual ~Model() = default;

  // What the KV cache must hold per token for this model (this rank's heads).
  virtual KvCacheSpec kv_cache_spec() const = 0;

  // Runs one step: writes the new tokens' K/V into `kv` and returns f32 logits
  // [batch.logits_rows.size(), vocab] on the ops' device, one row per entry of logits_rows.
  virtual Tensor forward(const Batch& batch, KvCacheView& kv) = 0;
};

// What a factory builds a model from. `config` and `weights` are valid during the factory call
// only (copy what the model keeps); `ops` outlives the model.
struct ModelContext {
  const ModelConfig& config;
  WeightLoader& weights;
  Ops& ops;
};

using ModelFactory = std::unique_ptr<Model> (*)(const ModelContext& context);

// Bump whenever a type in these headers changes layout or a virtual function changes.
inline constexpr std::uint32_t kPluginAbiVersion = 4;

class ModelRegistrar {
 public:
  virtual ~ModelRegistrar() = default;
  virtual void add(std::string_view architecture, ModelFactory factory) = 0;
};

struct PluginInfo {
  std::uint32_t abi_version;
  const char* name;
  void (*register_models)(ModelRegistrar& registrar);
};

inline constexpr const char* kPluginEntryPoint = "minivllm_plugin";

}  // namespace minivllm

// Defines the plugin's entry point; the braces that follow are the body of its registration.
#define MINIVLLM_PLUGIN(plugin_name, registrar_param)                                     \
  static void minivllm_register_models(::minivllm::ModelRegistrar& registrar_param);     \
  extern "C" __attribute__((visibility("default"))) const ::minivllm::PluginInfo*         \
  minivllm_plugin() {                                                                     \
    static const ::minivllm::PluginInfo info{::minivllm::kPluginAbiVersion, plugin_name,  \
                                             &minivllm_register_models};                  \
    return &info;                                                                         \
  }                                                                                       \
  static void minivllm_register_models(::minivllm::ModelRegistrar& registrar_param)
