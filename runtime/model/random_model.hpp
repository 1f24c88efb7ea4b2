#pragma once
// A random-v1 checkpoint for a Hugging Face config, with the tensors its model family lists:
// what `minivllm checkpoint` writes (and the tests and benchmarks make their models with).
#include <cstdint>
#include <filesystem>
#include <vector>

#include <minivllm/model.hpp>

#include "checkpoint/safetensors.hpp"
#include "model/plugin_registry.hpp"

namespace minivllm {

// Checks the config with its family (as loading does), then writes out_dir/config.json and
// out_dir/model.safetensors. Returns the tensors written. Throws minivllm::Error.
std::vector<CheckpointTensor> write_random_model(const PluginRegistry& plugins,
                                                 const std::filesystem::path& hf_config,
                                                 const std::filesystem::path& out_dir,
                                                 std::uint64_t seed,
                                                 const WriteProgress& progress = {});

}  // namespace minivllm
