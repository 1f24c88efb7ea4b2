#pragma once
// Messages between the runtime's own actors (engine <-> scheduler <-> worker), their type ID
// block and the actors' typed interfaces. Not part of the embedding API.
#include <cstdint>
#include <string>
#include <vector>

#include <minivllm/batch.hpp>

#include <minivllm/actors/messages.hpp>

#include "engine/decode_continuation.hpp"

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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Batch& x) {
  return f(caf::meta::type_name("minivllm::Batch"), x.token_ids, x.positions, x.slot_mapping,
           x.query_start, x.context_lens, x.block_tables, x.max_blocks_per_seq, x.logits_rows);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SeqRequest& x) {
  return f(caf::meta::type_name("minivllm::SeqRequest"), x.request_id, x.first_seq_id, x.prompt,
           x.params);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SeqToken& x) {
  return f(caf::meta::type_name("minivllm::SeqToken"), x.seq_id, x.token);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SeqUpdate& x) {
  return f(caf::meta::type_name("minivllm::SeqUpdate"), x.seq_id, x.token,
           x.logprobs, x.finish_reason, x.stop_str, x.stop_str_set, x.stop_token_id, x.text,
           x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SeqAdmitted& x) {
  return f(caf::meta::type_name("minivllm::SeqAdmitted"), x.seq_id, x.num_cached_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SeqPromptLogprobs& x) {
  return f(caf::meta::type_name("minivllm::SeqPromptLogprobs"), x.seq_id, x.logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, LogitsRows& x) {
  return f(caf::meta::type_name("minivllm::LogitsRows"), x.seq_id, x.start, x.count,
           x.prompt_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PromptLogprob& x) {
  return f(caf::meta::type_name("minivllm::PromptLogprob"), x.seq_id, x.position, x.logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepOutputs& x) {
  return f(caf::meta::type_name("minivllm::StepOutputs"), x.admitted, x.prompt_logprobs, x.tokens,
           x.updates);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerSeq& x) {
  return f(caf::meta::type_name("minivllm::WorkerSeq"), x.seq_id, x.params, x.prompt, x.seed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DecodeContinuation& x) {
  return f(caf::meta::type_name("minivllm::DecodeContinuation"), x.removed_rows, x.grown_rows,
           x.grown_blocks, x.block_size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepWork& x) {
  return f(caf::meta::type_name("minivllm::StepWork"), x.step, x.batch, x.new_seqs,
           x.sample_seq_ids, x.released_seq_ids, x.look_ahead, x.continues_step, x.continuation,
           x.logits_layout);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepResult& x) {
  return f(caf::meta::type_name("minivllm::StepResult"), x.step, x.tokens, x.logprobs,
           x.run_seconds, x.gap_seconds, x.prompt_logprobs, x.spent_batch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepFailed& x) {
  return f(caf::meta::type_name("minivllm::StepFailed"), x.step, x.error);
}

}  // namespace minivllm

CAF_BEGIN_TYPE_ID_BLOCK(minivllm_internal, caf::id_block::minivllm_api::end)
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::SeqRequest))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepOutputs))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepWork))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepResult))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepFailed))
  CAF_ADD_ATOM(minivllm_internal, minivllm, ready_atom, "mv_ready")
CAF_END_TYPE_ID_BLOCK(minivllm_internal)

namespace minivllm {

// Where the scheduler sends each step's outputs: the engine.
using step_output_sink = caf::typed_actor<caf::reacts_to<StepOutputs>>;

using scheduler_actor = caf::typed_actor<
    caf::replies_to<SeqRequest>::with<bool>,               // queued (or an error)
    caf::replies_to<abort_atom, std::string>::with<bool>,  // false: unknown or done
    caf::replies_to<stats_atom>::with<EngineStats>>;

using worker_actor = caf::typed_actor<
    caf::replies_to<ready_atom>::with<std::int32_t>,  // the vocabulary size, once loaded
    caf::replies_to<StepWork>::with<StepResult>>;

}  // namespace minivllm
