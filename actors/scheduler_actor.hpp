#pragma once
// The scheduler actor: runs the engine core (engine/engine_core.hpp) on messages, sending its
// steps to the worker and its outputs to the engine actor.
#include <chrono>

#include "actors/remote_messages.hpp"
#include "engine/engine_core.hpp"
#include "engine/stop_conditions.hpp"

namespace minivllm {

using scheduler_actor = caf::typed_actor<
    caf::replies_to<SeqRequest>::with<bool>,               // queued (or an error)
    caf::replies_to<abort_atom, std::string>::with<bool>,  // false: unknown or done
    caf::replies_to<stats_atom>::with<EngineStats>,
    // A worker of the group is lost (the join door saw its process go): as when a step says so.
    caf::reacts_to<lost_atom, std::string>>;

// `text` may be empty (no stop strings then). A step the worker has not answered within
// `step_timeout` of being sent fails.
scheduler_actor spawn_scheduler(caf::actor_system& sys, const EngineConfig& config,
                                std::chrono::milliseconds step_timeout, TextStreams text,
                                step_output_sink engine, worker_actor worker);

}  // namespace minivllm
