#pragma once
// A ModelRunner that owns everything behind it: the plugins, the backend, the loaded model and
// its KV cache, built from a launch Config (CAF-free; the worker builds it on its own thread,
// which then owns the CUDA device when runtime.backend = "cuda").
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/runtime_spec.hpp"

#include <minivllm/config.hpp>
#include "backend/tensor_parallel_group.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

// Throws minivllm::Error (bad plugin dir, model, backend not built, no such device, cache does
// not fit or, on the cpu backend, size not given). `device`: the CUDA device (0 on the cpu).
// With `group`, rank `rank` of its tensor-parallel ranks: this rank's shard of the weights and
// its KV heads.
LoadedRunner load_model_runner(const Config& config, int device = 0,
                               const TensorParallelGroup* group = nullptr, int rank = 0);

// The checks load_model_runner makes of the model folder (a plugin for its architecture, every
// tensor's name, dtype and shape), by loading it on the CPU backend without a KV cache; throws
// what loading would. `minivllm info` runs them. Returns the checkpoint tensors the model does
// not use.
std::vector<std::string> check_model_folder(const Config& config);

}  // namespace minivllm
