#pragma once
// From a Hugging Face model folder to a running Model: config.json picks the plugin factory by
// architecture, the factory loads its weights from the folder's safetensors through the backend.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/model.hpp>

#include "model/plugin_registry.hpp"

namespace minivllm {

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<Model> model;  // uses the Ops it was loaded with: keep them alive
  std::vector<std::string> unused_tensors;  // checkpoint tensors the model did not load
};

// Throws minivllm::Error naming the file and the problem (bad config, no plugin for the
// architecture, a tensor missing or of the wrong shape). Tensors the model leaves unused are
// logged as a warning (and listed in LoadedModel).
LoadedModel load_model(const PluginRegistry& plugins, const std::filesystem::path& model_dir,
                       Ops& ops, int tp_rank = 0, int tp_size = 1);

}  // namespace minivllm
