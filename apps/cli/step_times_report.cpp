#include "cli/step_times_report.hpp"

#include <cstdio>
#include <limits>
#include <string>

namespace minivllm::cli {
namespace {

std::string rows_label(const StepTimeBucket& b) {
  if (b.max_rows == std::numeric_limits<std::int32_t>::max())
    return std::to_string(b.min_rows) + "+";
  if (b.min_rows == b.max_rows) return std::to_string(b.min_rows);
  return std::to_string(b.min_rows) + "-" + std::to_string(b.max_rows);
}

double per_step_us(double seconds, std::uint64_t steps) {
  return steps == 0 ? 0.0 : seconds * 1e6 / static_cast<double>(steps);
}

}  // namespace

void print_step_times(const StepTimes& times, double wall_seconds) {
  std::printf("\nwhere the time went (worker wall time per step: launches, device, sampling; of "
              "it, the host launching the step; the scheduler's CPU time per step result, and in "
              "it: the result's tokens, planning the next step, its batch):\n");
  std::printf("%-8s %-8s %7s %9s %9s %9s %9s %9s %9s %8s %8s %8s\n", "step", "rows", "steps",
              "tokens", "run s", "mean ms", "max ms", "launch ms", "sched us", "tokens", "plan",
              "batch");
  for (const StepTimeBucket& b : times.buckets)
    std::printf("%-8s %-8s %7llu %9llu %9.3f %9.3f %9.3f %9.3f %9.1f %8.1f %8.1f %8.1f\n",
                b.decode ? "decode" : "prefill", rows_label(b).c_str(),
                static_cast<unsigned long long>(b.steps), static_cast<unsigned long long>(b.tokens),
                b.run_seconds, per_step_us(b.run_seconds, b.steps) / 1e3,
                b.max_run_seconds * 1e3, per_step_us(b.launch_seconds, b.steps) / 1e3,
                per_step_us(b.scheduler.seconds, b.steps),
                per_step_us(b.scheduler.tokens_seconds, b.steps),
                per_step_us(b.scheduler.plan_seconds, b.steps),
                per_step_us(b.scheduler.batch_seconds, b.steps));
  const std::uint64_t steps = times.steps();
  std::printf("steps %.3f s of %.3f s wall; worker between steps %.3f s (%.1f us per step)\n",
              times.run_seconds(), wall_seconds, times.worker_gap_seconds,
              per_step_us(times.worker_gap_seconds, steps));
  std::printf("scheduler %.3f s (%.1f us per step result)\n", times.scheduler_seconds,
              per_step_us(times.scheduler_seconds, times.scheduler_steps));
}

nlohmann::json step_times_json(const StepTimes& times) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const StepTimeBucket& b : times.buckets)
    buckets.push_back({{"kind", b.decode ? "decode" : "prefill"},
                       {"rows", rows_label(b)},
                       {"steps", b.steps},
                       {"tokens", b.tokens},
                       {"run_seconds", b.run_seconds},
                       {"max_run_seconds", b.max_run_seconds},
                       {"launch_seconds", b.launch_seconds},
                       {"scheduler_seconds", b.scheduler.seconds},
                       {"scheduler_tokens_seconds", b.scheduler.tokens_seconds},
                       {"scheduler_plan_seconds", b.scheduler.plan_seconds},
                       {"scheduler_batch_seconds", b.scheduler.batch_seconds}});
  return {{"buckets", buckets},
          {"run_seconds", times.run_seconds()},
          {"worker_gap_seconds", times.worker_gap_seconds},
          {"scheduler_seconds", times.scheduler_seconds},
          {"scheduler_us_per_step", per_step_us(times.scheduler_seconds, times.scheduler_steps)}};
}

}  // namespace minivllm::cli
