#pragma once
// A ModelRunner that owns everything behind it: the plugins, the backend, the loaded model and
// its KV cache, built from a launch Config (CAF-free; the worker builds it on its own thread).
#include <memory>

#include "config/config.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

// Throws minivllm::Error (bad plugin dir, model, backend not built, cache size not given).
std::unique_ptr<ModelRunner> load_model_runner(const Config& config);

}  // namespace minivllm
