#pragma once
// The worker: one per device, on its own thread. Owns the model runner (model, KV cache,
// backend), runs each step's batch and samples the next token of every sequence that needs one.
#include <functional>
#include <memory>
#include <vector>

#include "actors/internal_messages.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

worker_actor spawn_worker(caf::actor_system& sys,
                          std::function<std::unique_ptr<ModelRunner>()> make_runner,
                          std::vector<std::int32_t> eos_ids);

}  // namespace minivllm
