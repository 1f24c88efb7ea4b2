#pragma once
// The scheduler: owns the sequences and the Scheduler (with its BlockManager), and drives the
// step loop: schedule -> StepWork to the worker -> its tokens -> stop conditions -> outputs to
// the engine -> next step. Aborts that arrive during a step take effect when it returns.
#include "actors/internal_messages.hpp"
#include "engine/llm_engine.hpp"
#include "engine/stop_conditions.hpp"

namespace minivllm {

// `detokenize` may be empty (no stop strings then).
scheduler_actor spawn_scheduler(caf::actor_system& sys, const EngineConfig& config,
                                Detokenizer detokenize, step_output_sink engine,
                                worker_actor worker);

}  // namespace minivllm
