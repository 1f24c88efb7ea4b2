#pragma once
// A model as the runtime drives it, and the plugin API that registers model families.
//
// A plugin is a shared library exporting one C function, `minivllm_plugin`, that returns a
// PluginInfo: the ABI version it was built against and a function registering its model
// families. A family holds everything the runtime knows of a model: the Hugging Face
// architectures and model_types it accepts, its config.json extras, its chat formats, its
// checkpoint's tensors and the model itself. Define the entry point with MINIVLLM_PLUGIN:
//
//   MINIVLLM_PLUGIN("qwen3", registrar) { registrar.add(std::make_unique<Qwen3Family>()); }
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/batch.hpp>
#include <minivllm/chat.hpp>
#include <minivllm/config_fields.hpp>
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

// What a family builds a model from. `config`, `fields` and `weights` are valid during the
// call only (copy what the model keeps); `ops` outlives the model.
struct ModelContext {
  const ModelConfig& config;
  const ConfigFields& fields;  // the same config.json, for the family's own fields
  WeightLoader& weights;
  Ops& ops;
};

// A tensor of the family's checkpoint, as `minivllm checkpoint` writes it (bf16, random-v1).
struct CheckpointTensor {
  std::string name;
  Shape shape;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  // config.json's "architectures" names and "model_type" values this family builds.
  virtual std::vector<std::string> architectures() const = 0;
  virtual std::vector<std::string> model_types() const = 0;
  // Reads the family's own fields and refuses every value it does not implement (hidden_act
  // "gelu" where only silu is built, a sliding window, biases): throws minivllm::Error naming
  // the field. The runtime calls it before create, and `info` and `checkpoint` call it too.
  virtual void check_config(const ModelConfig& config, const ConfigFields& fields) const = 0;
  // The checkpoint's tensors in random-v1 file order (shared/docs/random-checkpoint.md).
  virtual std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                           const ConfigFields& fields) const = 0;
  // The format that renders `chat_template` (tokenizer_config.json's), or nullptr when the
  // family knows no format like it.
  virtual ChatFormat chat_format(std::string_view chat_template) const = 0;
  // The model with its weights (the family's weight map); throws minivllm::Error.
  virtual std::unique_ptr<Model> create(const ModelContext& context) const = 0;
};

// Bump whenever a type in these headers changes layout or a virtual function changes.
inline constexpr std::uint32_t kPluginAbiVersion = 6;

class ModelRegistrar {
 public:
  virtual ~ModelRegistrar() = default;
  // The registry keeps the family for the life of the process (plugins are never unloaded).
  virtual void add(std::unique_ptr<ModelFamily> family) = 0;
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
