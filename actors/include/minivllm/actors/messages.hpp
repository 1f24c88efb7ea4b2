#pragma once
// The client-facing messages of the runtime's actors: inspect() for each (so they can cross a
// process boundary later) and their CAF type ID block. Include only where CAF is used.
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/none.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include <minivllm/actors/requests.hpp>

namespace minivllm {

// A request's sink: receives its deltas (may be a default-constructed, invalid handle: no stream).
using delta_sink = caf::typed_actor<caf::reacts_to<RequestDelta>>;

// std::optional is not inspectable in CAF 0.17: each travels as a presence flag and a value.
template <class T>
struct OptionalField {
  bool present;
  T value;
  explicit OptionalField(const std::optional<T>& x) : present(x.has_value()), value(x.value_or(T{})) {}
  std::optional<T> get() const { return present ? std::optional<T>(value) : std::nullopt; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SamplingParams& x) {
  // One declaration each: a declaration deducing two template arguments is ill-formed (clang).
  OptionalField seed(x.seed);
  OptionalField logprobs(x.logprobs);
  OptionalField prompt_logprobs(x.prompt_logprobs);
  OptionalField temperature(x.temperature);
  OptionalField top_k(x.top_k);
  OptionalField top_p(x.top_p);
  OptionalField min_p(x.min_p);
  OptionalField repetition_penalty(x.repetition_penalty);
  return f(caf::meta::type_name("minivllm::SamplingParams"), x.n, temperature.present,
           temperature.value, top_k.present, top_k.value, top_p.present, top_p.value,
           min_p.present, min_p.value, repetition_penalty.present, repetition_penalty.value,
           x.presence_penalty, x.frequency_penalty,
           seed.present, seed.value, x.max_tokens, x.min_tokens, x.stop,
           x.include_stop_str_in_output, x.stop_token_ids, x.ignore_eos, logprobs.present,
           logprobs.value, prompt_logprobs.present, prompt_logprobs.value, x.skip_special_tokens, x.output_kind,
           caf::meta::load_callback([&]() -> caf::error {
             x.seed = seed.get();
             x.temperature = temperature.get();
             x.top_k = top_k.get();
             x.top_p = top_p.get();
             x.min_p = min_p.get();
             x.repetition_penalty = repetition_penalty.get();
             x.logprobs = logprobs.get();
             x.prompt_logprobs = prompt_logprobs.get();
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ChatContentPart& x) {
  return f(caf::meta::type_name("minivllm::ChatContentPart"), x.type, x.text);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ChatMessage& x) {
  OptionalField reasoning(x.reasoning_content);
  return f(caf::meta::type_name("minivllm::ChatMessage"), x.role, x.content, reasoning.present,
           reasoning.value, x.content_parts, caf::meta::load_callback([&]() -> caf::error {
             x.reasoning_content = reasoning.get();
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ChatOptions& x) {
  OptionalField enable_thinking(x.enable_thinking);
  return f(caf::meta::type_name("minivllm::ChatOptions"), x.add_generation_prompt,
           enable_thinking.present, enable_thinking.value,
           caf::meta::load_callback([&]() -> caf::error {
             x.enable_thinking = enable_thinking.get();
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Logprob& x) {
  return f(caf::meta::type_name("minivllm::Logprob"), x.token, x.logprob, x.rank);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PositionLogprobs& x) {
  return f(caf::meta::type_name("minivllm::PositionLogprobs"), x.chosen, x.top);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CompletionOutput& x) {
  OptionalField stop_str(x.stop_str);
  OptionalField stop_token_id(x.stop_token_id);
  return f(caf::meta::type_name("minivllm::CompletionOutput"), x.index, x.text, x.token_ids,
           x.logprobs, x.finish_reason, stop_str.present, stop_str.value, stop_token_id.present,
           stop_token_id.value, caf::meta::load_callback([&]() -> caf::error {
             x.stop_str = stop_str.get();
             x.stop_token_id = stop_token_id.get();
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RequestOutput& x) {
  // prompt_logprobs as which positions have one and those, in order (std::optional has no
  // inspect in CAF 0.17).
  std::vector<std::uint8_t> present;
  std::vector<PositionLogprobs> values;
  for (const auto& p : x.prompt_logprobs) {
    present.push_back(p.has_value());
    if (p) values.push_back(*p);
  }
  return f(caf::meta::type_name("minivllm::RequestOutput"), x.request_id, x.prompt_token_ids,
           x.outputs, x.num_cached_tokens, x.finished, present, values,
           caf::meta::load_callback([&]() -> caf::error {
             x.prompt_logprobs.clear();
             std::size_t next = 0;
             for (std::uint8_t has : present) {
               if (has && next == values.size()) return caf::sec::invalid_argument;
               x.prompt_logprobs.push_back(has ? std::optional(values[next++]) : std::nullopt);
             }
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GenerateRequest& x) {
  return f(caf::meta::type_name("minivllm::GenerateRequest"), x.request_id, x.prompt,
           x.prompt_token_ids, x.messages, x.chat_options, x.add_special_tokens, x.params);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RequestDelta& x) {
  return f(caf::meta::type_name("minivllm::RequestDelta"), x.request_id, x.index, x.token_ids,
           x.text, x.logprobs, x.finished);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SchedulerTurn& x) {
  return f(caf::meta::type_name("minivllm::SchedulerTurn"), x.seconds, x.tokens_seconds,
           x.plan_seconds, x.batch_seconds);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepTimeBucket& x) {
  return f(caf::meta::type_name("minivllm::StepTimeBucket"), x.decode, x.min_rows, x.max_rows,
           x.steps, x.tokens, x.run_seconds, x.max_run_seconds, x.launch_seconds, x.scheduler);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepTimes& x) {
  return f(caf::meta::type_name("minivllm::StepTimes"), x.buckets, x.worker_gap_seconds,
           x.scheduler_seconds, x.scheduler_steps);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Histogram& x) {
  return f(caf::meta::type_name("minivllm::Histogram"), x.bounds, x.counts, x.sum, x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EngineCounters& x) {
  return f(caf::meta::type_name("minivllm::EngineCounters"), x.prompt_tokens, x.generation_tokens,
           x.prefix_cache_queries, x.prefix_cache_hits, x.finished_stop, x.finished_length,
           x.finished_abort, x.finished_error, x.time_to_first_token, x.inter_token_latency,
           x.e2e_request_latency, x.request_queue_time);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EngineStats& x) {
  return f(caf::meta::type_name("minivllm::EngineStats"), x.num_steps, x.num_running,
           x.num_waiting, x.num_preemptions, x.num_free_blocks, x.num_blocks,
           x.invariant_violation, x.step_times, x.counters);
}

}  // namespace minivllm

CAF_BEGIN_TYPE_ID_BLOCK(minivllm_api, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(minivllm_api, (minivllm::GenerateRequest))
  CAF_ADD_TYPE_ID(minivllm_api, (minivllm::RequestDelta))
  CAF_ADD_TYPE_ID(minivllm_api, (minivllm::RequestOutput))
  CAF_ADD_TYPE_ID(minivllm_api, (minivllm::EngineStats))
  CAF_ADD_TYPE_ID(minivllm_api, (minivllm::delta_sink))
  CAF_ADD_TYPE_ID(minivllm_api, (std::vector<std::int32_t>))
  CAF_ADD_ATOM(minivllm_api, minivllm, abort_atom, "mv_abort")
  CAF_ADD_ATOM(minivllm_api, minivllm, stats_atom, "mv_stats")
  CAF_ADD_ATOM(minivllm_api, minivllm, shutdown_atom, "mv_shutdwn")
  CAF_ADD_ATOM(minivllm_api, minivllm, tokenize_atom, "mv_tokens")
CAF_END_TYPE_ID_BLOCK(minivllm_api)
