#pragma once
// Messages between the runtime's own actors (engine <-> scheduler <-> worker), their type ID
// block and the actors' typed interfaces. Not part of the embedding API.
#include <cstdint>
#include <string>
#include <vector>

#include <minivllm/batch.hpp>

#include <minivllm/actors/messages.hpp>

#include "engine/step_messages.hpp"

namespace minivllm {

// worker -> scheduler, once its runner is built: what it can run.
struct WorkerReady {
  std::int32_t vocab_size = 0;
  std::int64_t num_blocks = 0;  // the KV-cache blocks it holds
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerReady& x) {
  return f(caf::meta::type_name("minivllm::WorkerReady"), x.vocab_size, x.num_blocks);
}

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
           x.updates, x.device_lost, x.worker_lost, x.worker_restored);
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
           x.run_seconds, x.launch_seconds, x.gap_seconds, x.prompt_logprobs, x.spent_batch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepFailed& x) {
  return f(caf::meta::type_name("minivllm::StepFailed"), x.step, x.error,
           x.device_lost);
}

}  // namespace minivllm

CAF_BEGIN_TYPE_ID_BLOCK(minivllm_internal, caf::id_block::minivllm_api::end)
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::SeqRequest))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepOutputs))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepWork))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepResult))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::StepFailed))
  CAF_ADD_TYPE_ID(minivllm_internal, (minivllm::WorkerReady))
  CAF_ADD_ATOM(minivllm_internal, minivllm, ready_atom, "mv_ready")
CAF_END_TYPE_ID_BLOCK(minivllm_internal)

namespace minivllm {

// Where the scheduler sends each step's outputs: the engine.
using step_output_sink = caf::typed_actor<caf::reacts_to<StepOutputs>>;

using worker_actor = caf::typed_actor<
    caf::replies_to<ready_atom>::with<WorkerReady>,  // once loaded
    caf::replies_to<StepWork>::with<StepResult>>;

}  // namespace minivllm
