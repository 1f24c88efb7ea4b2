#pragma once
// The engine core: one step loop for every door. It owns the sequences of the requests it was
// given, the Scheduler (with its BlockManager) and the steps at the worker, and turns
//   SeqRequest -> StepWork (to the worker) -> StepResult -> stop checks -> StepOutputs
// and plans a step ahead while one runs (the look-ahead) when the next is certain. Plain C++ and
// single-threaded: the scheduler actor drives it from messages, the synchronous LLMEngine from a
// loop. Aborts that arrive while a step runs take effect when it returns.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/scheduler.hpp"
#include "engine/step_messages.hpp"
#include <minivllm/step_times.hpp>
#include "engine/stop_conditions.hpp"
#include "engine/text_stream.hpp"

namespace minivllm {

struct EngineConfig {
  SchedulerConfig scheduler;
  CacheConfig cache;
  std::vector<std::int32_t> eos_token_ids;
  std::uint64_t seed = 0;  // seeds the streams of requests that bring no seed
};

class EngineCore {
 public:
  // Without text streams (no tokenizer) requests with stop strings are refused.
  EngineCore(const EngineConfig& config, TextStreams text_streams);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Queues a validated request's sequences. Throws minivllm::Error (naming the request) for a
  // duplicate id or one that could never fit; nothing of it stays queued then.
  void add(SeqRequest& request);
  // Ends the request's sequences (updates in `out`), now or, while a step runs, when it returns.
  // False when it is unknown or done.
  bool abort(const std::string& request_id, StepOutputs& out);

  // The next step for the worker: one when none runs, or one planned ahead of the running one
  // when it can be; none otherwise. Call until none after each add and complete. A core that
  // cannot schedule waiting requests ends them with an error (in `out`).
  std::optional<StepWork> next_step(StepOutputs& out);
  // The oldest step at the worker is back. Its tokens go into their sequences, stops are
  // checked, finished sequences are freed; `out` gets what changed. Starts a scheduler turn.
  void complete(StepResult& result, StepOutputs& out);
  // Ends the turn complete() started (the sends of next_step count in): recorded in step_times.
  void end_turn();
  // The oldest step at the worker failed: the requests it ran end with `error`.
  void fail_step(const std::string& error, StepOutputs& out);
  // The worker can run nothing more: the steps at it are dropped and every request ends with
  // `error`.
  void fail_all(const std::string& error, StepOutputs& out);
  // The worker's KV cache lost what the free blocks held (a worker joined in a lost one's
  // place): no later request matches a prefix cached before.
  void forget_cached_prefixes();

  bool has_unfinished() const;
  bool step_running() const;
  const Scheduler& scheduler() const;
  std::uint64_t num_steps() const;
  const StepTimes& step_times() const;

  struct State;

 private:
  std::unique_ptr<State> st_;
};

}  // namespace minivllm
