#pragma once
// What a client exchanges with the engine actor, as plain structs (no CAF here, so the
// synchronous facade and its callers stay cheap to compile; messages.hpp registers them).
#include <cstdint>
#include <string>
#include <vector>

#include <minivllm/engine_counters.hpp>
#include <minivllm/request.hpp>
#include <minivllm/step_times.hpp>

namespace minivllm {

// A snapshot of the runtime, answered by the scheduler.
struct EngineStats {
  std::uint64_t num_steps = 0;
  std::uint64_t num_running = 0;
  std::uint64_t num_waiting = 0;
  std::uint64_t num_preemptions = 0;
  std::uint64_t num_free_blocks = 0;
  std::uint64_t num_blocks = 0;
  std::string invariant_violation;  // "" when the block pool agrees with the running sequences
  StepTimes step_times;  // since the runtime started
  EngineCounters counters;  // since the runtime started
};

}  // namespace minivllm
