#pragma once
// The worker: one per device. A pooled actor in front of a thread of its own (JobThread) that
// owns the model runner (model, KV cache, backend), runs each step's batch and samples the next
// token of every sequence that needs one. Steps queue at that thread in order, so the scheduler
// can hand over the next step while the current one runs.
#include <functional>
#include <memory>
#include <vector>

#include "actors/runtime_spec.hpp"

#include "actors/internal_messages.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

// Builds the runner on the worker's thread and waits for it: a failed build is reported by the
// worker's answer to ready_atom (WorkerReady when it was built).
worker_actor spawn_worker(caf::actor_system& sys,
                          std::function<LoadedRunner()> make_runner,
                          std::vector<std::int32_t> eos_ids);

}  // namespace minivllm
