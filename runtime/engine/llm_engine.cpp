#include "engine/llm_engine.hpp"

#include <minivllm/error.hpp>

namespace minivllm {

void LLMEngine::StepEvents::delta(RequestDelta&& delta) {
  auto& list = deltas[delta.request_id];
  if (list.empty()) advanced.push_back(delta.request_id);
  list.push_back(std::move(delta));
}

void LLMEngine::StepEvents::answered(RequestOutput&& output) {
  const std::string id = output.request_id;
  if (deltas.count(id) == 0) {
    deltas[id];
    advanced.push_back(id);
  }
  answered_outputs.insert_or_assign(id, std::move(output));
}

void LLMEngine::StepEvents::failed(const std::string& request_id, const std::string& error, bool) {
  errors.emplace_back(request_id, error);
}

LLMEngine::LLMEngine(const EngineConfig& config, ModelRunner& runner, TextStreams text)
    : text_(std::move(text)),
      core_(config, text_),
      executor_(runner, config.eos_token_ids),
      table_(nullptr, {}, text_, runner.vocab_size()) {}

void LLMEngine::add_request(const std::string& request_id, std::vector<std::int32_t> prompt,
                            const SamplingParams& params) {
  GenerateRequest request;
  request.request_id = request_id;
  request.prompt_token_ids = std::move(prompt);
  request.params = params;
  SeqRequest seqs = table_.open(request, /*streams=*/true);
  try {
    core_.add(seqs);
  } catch (const std::exception& e) {
    StepEvents ignored;
    table_.refuse(seqs.request_id, e.what(), ignored);
    throw;
  }
  reported_[seqs.request_id] = {params.output_kind, false};
}

bool LLMEngine::abort_request(const std::string& request_id) {
  StepOutputs out;
  if (!core_.abort(request_id, out)) return false;
  StepEvents ignored;  // its outputs end here
  table_.apply(out, ignored);
  reported_.erase(request_id);
  return true;
}

std::vector<RequestOutput> LLMEngine::step() {
  events_ = {};
  StepOutputs out;
  std::optional<StepWork> work = core_.next_step(out);
  if (work) {
    executor_.run(*work, events_);
    if (events_.results.empty() && events_.failures.empty()) executor_.drain(events_);
    if (!events_.failures.empty()) core_.fail_step(events_.failures.front().error, out);
    else core_.complete(events_.results.front(), out);
    core_.end_turn();
  }
  table_.apply(out, events_);
  for (const auto& [id, error] : events_.errors) reported_.erase(id);
  if (!events_.errors.empty())
    throw Error("request " + events_.errors.front().first + ": " + events_.errors.front().second);
  std::vector<RequestOutput> outputs;
  for (const std::string& id : events_.advanced) {
    auto it = reported_.find(id);
    if (it == reported_.end()) continue;
    std::optional<RequestOutput> o = output_of(id, it->second);
    if (!o) continue;
    if (o->finished) reported_.erase(it);
    outputs.push_back(std::move(*o));
  }
  return outputs;
}

std::optional<RequestOutput> LLMEngine::output_of(const std::string& id, Reported& reported) {
  const auto answered = events_.answered_outputs.find(id);
  const bool finished = answered != events_.answered_outputs.end();
  if (reported.kind == OutputKind::final_only && !finished) return std::nullopt;
  const RequestOutput& now = finished ? answered->second : *table_.output(id);
  if (reported.kind != OutputKind::delta) return now;
  // This step's deltas, every completion, with the prompt the first time.
  RequestOutput out;
  out.request_id = id;
  out.finished = finished;
  out.num_cached_tokens = now.num_cached_tokens;
  if (!reported.prompt) {
    out.prompt_token_ids = now.prompt_token_ids;
    out.prompt_logprobs = now.prompt_logprobs;
    reported.prompt = true;
  }
  for (const CompletionOutput& c : now.outputs) {
    CompletionOutput& d = out.outputs.emplace_back();
    d.index = c.index;
    d.finish_reason = c.finish_reason;
    d.stop_str = c.stop_str;
    d.stop_token_id = c.stop_token_id;
  }
  for (RequestDelta& delta : events_.deltas[id]) {
    CompletionOutput& d = out.outputs.at(static_cast<std::size_t>(delta.index));
    d.token_ids.insert(d.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
    d.text += delta.text;
    for (PositionLogprobs& l : delta.logprobs) d.logprobs.push_back(std::move(l));
  }
  return out;
}

std::vector<RequestOutput> LLMEngine::run_until_done() {
  std::vector<RequestOutput> finished;
  while (has_unfinished_requests())
    for (RequestOutput& out : step())
      if (out.finished) finished.push_back(std::move(out));
  return finished;
}

}  // namespace minivllm
