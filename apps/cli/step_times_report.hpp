#pragma once
// Prints where a bench run's time went (EngineStats::step_times) as a table, and as JSON for
// the result file.
#include <nlohmann/json.hpp>

#include <minivllm/step_times.hpp>

namespace minivllm::cli {

// `times` over a run of `wall_seconds` (the bench's own clock).
void print_step_times(const StepTimes& times, double wall_seconds);
nlohmann::json step_times_json(const StepTimes& times);

}  // namespace minivllm::cli
