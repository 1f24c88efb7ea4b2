#pragma once
// Runs the engine core's steps on a model runner: one per device. It keeps what sampling needs
// of each sequence (parameters, prompt, output so far, RNG: only new sequences travel, once),
// runs each StepWork's batch, samples the next token of every row that needs one and answers
// with a StepResult. A runner that samples on its device gets each step queued behind the one
// still running (fed by its tokens when it can be), so the device never waits for the host:
// then a step is answered by a later call. Answers always come in step order.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model_runner.hpp"
#include "engine/step_messages.hpp"

namespace minivllm {

// Where a step's answer goes.
class StepAnswers {
 public:
  virtual void result(StepResult&& result) = 0;
  virtual void failed(StepFailed&& failure) = 0;

 protected:
  ~StepAnswers() = default;
};

class StepExecutor {
 public:
  // `runner` must outlive the executor.
  StepExecutor(ModelRunner& runner, std::vector<std::int32_t> eos_ids);
  ~StepExecutor();
  StepExecutor(const StepExecutor&) = delete;
  StepExecutor& operator=(const StepExecutor&) = delete;

  // Runs `work` (its arrays are taken). Answers it now, or later when it was queued on the
  // device; a step queued before it may be answered first. Never throws: a failed step is
  // answered with StepFailed.
  void run(StepWork& work, StepAnswers& answers);
  // Idle work: answers the queued step once its tokens are back. True while one waits.
  bool poll(StepAnswers& answers);
  // Answers the queued step, waiting for it.
  void drain(StepAnswers& answers);

  ModelRunner& runner();

  struct State;

 private:
  std::unique_ptr<State> st_;
};

}  // namespace minivllm
