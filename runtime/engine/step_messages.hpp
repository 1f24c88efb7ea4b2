#pragma once
// The messages of one engine's step loop, as plain structs: a request's sequences going in
// (SeqRequest), a step to run (StepWork) and what it gave (StepResult), and what a step changed
// for the requests (StepOutputs). EngineCore, StepExecutor and RequestTable exchange them; the
// actors carry them between threads and processes (actors/internal_messages.hpp gives each an
// inspect() and a CAF type ID).
#include <cstdint>
#include <string>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/decode_continuation.hpp"
#include <minivllm/logprobs.hpp>
#include <minivllm/request_output.hpp>
#include <minivllm/sampling_params.hpp>

namespace minivllm {

// engine -> scheduler: a validated request to schedule. The engine numbers its completions'
// sequences (first_seq_id + completion index), so step outputs can name them by number.
struct SeqRequest {
  std::string request_id;
  std::uint64_t first_seq_id = 0;
  std::vector<std::int32_t> prompt;
  SamplingParams params;
};

// scheduler -> engine: a sequence's new token in a step, when that is all there is to say.
struct SeqToken {
  std::uint64_t seq_id = 0;
  std::int32_t token = 0;
};

// scheduler -> engine: what else happened to a sequence in a step (it finished, failed or was
// aborted, or its token came with logprobs).
struct SeqUpdate {
  std::uint64_t seq_id = 0;
  std::int32_t token = -1;                 // this step's new token; -1: none (aborted)
  std::vector<PositionLogprobs> logprobs;  // the token's, when asked for
  FinishReason finish_reason = FinishReason::none;
  std::string stop_str;                     // set with `stop_str_set`
  bool stop_str_set = false;
  std::int32_t stop_token_id = -1;          // -1: none
  std::string text;  // the final text, when stop strings decided it (stop strings set)
  std::string error;  // the step failed: the request ends with this error
};

// scheduler -> engine: a sequence went to the worker for the first time (its request left the
// queue), with the prompt tokens the prefix cache held for it.
struct SeqAdmitted {
  std::uint64_t seq_id = 0;
  std::int32_t num_cached_tokens = 0;
};

// scheduler -> engine: a sequence's prompt logprobs, once it has all of them (positions 1 ..
// n-1: the first prompt token has none).
struct SeqPromptLogprobs {
  std::uint64_t seq_id = 0;
  std::vector<PositionLogprobs> logprobs;
};

// One step's outputs, applied in this order: the sequences admitted since the last outputs,
// prompt logprobs, the plain new tokens (the common case, kept small), then the updates.
struct StepOutputs {
  std::vector<SeqAdmitted> admitted;
  std::vector<SeqPromptLogprobs> prompt_logprobs;
  std::vector<SeqToken> tokens;
  std::vector<SeqUpdate> updates;
  // Not empty: the device is lost (every request ended with it in `updates`); the engine answers
  // what is left with it and stops.
  std::string device_lost;
  // Not empty: a worker of this replica's group is lost (its requests ended in `updates`); the
  // replica takes no request until a later StepOutputs says the group is whole again.
  std::string worker_lost;
  bool worker_restored = false;
};

// scheduler -> worker: a sequence the worker samples for from now on.
struct WorkerSeq {
  std::uint64_t seq_id = 0;
  SamplingParams params;
  std::vector<std::int32_t> prompt;
  std::uint64_t seed = 0;
};

// scheduler -> worker, in a step where some sequence wants prompt logprobs: the logits rows of
// one sequence of the plan (plan order; prepare_batch's logits_rows_of).
struct LogitsRows {
  std::uint64_t seq_id = 0;
  std::int32_t start = 0;  // the position of its first row
  std::int32_t count = 0;  // its logits rows: every position for prompt logprobs, else 1 or 0
  std::int32_t prompt_logprobs = -1;  // >= 0: the rows are prompt positions, top-k this many
};

// scheduler -> worker: one step to run.
struct StepWork {
  std::uint64_t step = 0;
  Batch batch;
  std::vector<WorkerSeq> new_seqs;              // before the batch uses them
  std::vector<std::uint64_t> sample_seq_ids;    // one per logits row, in row order
  std::vector<std::uint64_t> released_seq_ids;  // finished or aborted since the last step
  // Planned before the previous step's tokens were back: every row is a decode whose input token
  // (a placeholder in the batch) is the one the worker sampled for it in that step.
  bool look_ahead = false;
  // Not 0: a look-ahead step told as a change of step `continues_step`, the one before it
  // (decode_continuation.hpp); `batch` (empty) and `sample_seq_ids` are for the worker to fill
  // from that step's.
  std::uint64_t continues_step = 0;
  DecodeContinuation continuation;
  // Empty unless a sequence wants prompt logprobs: then the logits come to the host, every row.
  std::vector<LogitsRows> logits_layout;
};

// worker -> scheduler: the logprobs of prompt token `position` (> 0) of a sequence.
struct PromptLogprob {
  std::uint64_t seq_id = 0;
  std::int32_t position = 0;
  PositionLogprobs logprobs;
};

// worker -> scheduler: the sampled token per logits row.
struct StepResult {
  std::uint64_t step = 0;
  std::vector<std::int32_t> tokens;
  std::vector<PositionLogprobs> logprobs;  // empty, or one per token (rows not asking: empty)
  double run_seconds = 0;  // the worker's wall time running the step (StepTimes)
  // Of run_seconds, the host's time queuing the step's device work before waiting for it (an
  // eager step's kernel launches); 0 for a step run synchronously (the CPU backend).
  double launch_seconds = 0;
  double gap_seconds = 0;  // from the step before it ending there to this one starting
  std::vector<PromptLogprob> prompt_logprobs;  // of the step's prompt logprobs rows
  // The step's batch, emptied, back for the scheduler to refill: within a process its vectors
  // keep their capacity, so no step allocates (and page-faults in) a fresh one.
  Batch spent_batch;
};

// The worker's runner thread -> the worker: a step threw.
struct StepFailed {
  std::uint64_t step = 0;
  std::string error;
  bool device_lost = false;  // minivllm::DeviceLost: no later step can run either
};

}  // namespace minivllm
