#pragma once
// Where an engine's time goes, by kind of step: the worker's wall time running each step
// (launches, the device's work, sampling, the tokens back on the host), the worker's time between
// steps (the device waits then), and the scheduler's own time per step. Filled by the actors,
// read through EngineStats (`minivllm bench throughput` prints it).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace minivllm {

// One turn of the scheduler on a step result and its phases; or the sum of several.
struct SchedulerTurn {
  double seconds = 0;         // the whole turn
  double tokens_seconds = 0;  // the result's rows: tokens in, stop checks, outputs to the engine
  double plan_seconds = 0;    // the next step planned: look-ahead placeholders, Scheduler::schedule
  double batch_seconds = 0;   // its batch prepared (prepare_batch) and sent to the worker

  SchedulerTurn& operator+=(const SchedulerTurn& other);
  SchedulerTurn operator/(double divisor) const;
};

// The steps of one kind: with a prompt chunk (prefill), or pure decode of min_rows..max_rows
// sequences.
struct StepTimeBucket {
  bool decode = false;
  std::int32_t min_rows = 0;
  std::int32_t max_rows = 0;
  std::uint64_t steps = 0;
  std::uint64_t tokens = 0;  // tokens computed (a decode row is one)
  double run_seconds = 0;
  double max_run_seconds = 0;
  double launch_seconds = 0;  // of run_seconds, the host queuing the steps (StepResult)
  // The scheduler's turns on these steps' results, summed; the rest of a turn is between and
  // around its phases.
  SchedulerTurn scheduler;
};

struct StepTimes {
  std::vector<StepTimeBucket> buckets;  // the kinds seen, prefill first, decodes by rows
  double worker_gap_seconds = 0;        // from one step's tokens on the host to the next step's start
  double scheduler_seconds = 0;         // handling step results and planning the next steps
  std::uint64_t scheduler_steps = 0;    // step results it handled

  // A step of `rows` sequences and `tokens` tokens that ran `run_seconds` on the worker
  // (`launch_seconds` of it queuing), `gap` after the one before it there. Returns its bucket's
  // index.
  std::size_t record(bool decode, std::int32_t rows, std::int32_t tokens, double run_seconds,
                     double launch_seconds, double gap_seconds);
  // The scheduler's turn on a step result, of the step recorded in bucket `bucket`.
  void add_scheduler_turn(std::size_t bucket, const SchedulerTurn& turn);
  // Another engine's times (a data-parallel replica's) added to these, bucket by bucket.
  void add(const StepTimes& other);
  std::uint64_t steps() const;
  double run_seconds() const;
};

}  // namespace minivllm
