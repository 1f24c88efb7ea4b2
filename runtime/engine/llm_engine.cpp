#include "engine/llm_engine.hpp"

#include <algorithm>
#include <unordered_set>

#include <minivllm/error.hpp>

#include "engine/cpu_sampler.hpp"
#include "engine/prepare_batch.hpp"

namespace minivllm {

LLMEngine::LLMEngine(const EngineConfig& config, ModelRunner& runner, Detokenizer detokenize)
    : config_(config),
      runner_(runner),
      detokenize_(std::move(detokenize)),
      scheduler_(config.scheduler, config.cache),
      seed_source_(config.seed) {}

void LLMEngine::add_request(const std::string& request_id, std::vector<std::int32_t> prompt,
                            const SamplingParams& params) {
  const std::string who = "request " + request_id + ": ";
  if (requests_.count(request_id) != 0)
    throw Error(who + "a request with this id is already running");
  params.validate();
  if (!params.stop.empty() && !detokenize_)
    throw Error(who + "stop strings need a tokenizer, and this engine has none");
  const int vocab = runner_.vocab_size();
  for (std::int32_t id : prompt)
    if (id < 0 || id >= vocab)
      throw Error(who + "prompt token id " + std::to_string(id) + " is outside [0, " +
                  std::to_string(vocab) + ")");

  Request request;
  request.prompt = prompt;
  const auto shared = std::make_shared<const SamplingParams>(params);
  for (int i = 0; i < params.n; ++i) {
    // A seeded request's completion i uses seed + i (as vLLM does), whatever else runs.
    const std::uint64_t seed = params.seed ? *params.seed + i : seed_source_();
    request.seqs.push_back(
        std::make_unique<Sequence>(next_seq_id_++, request_id, i, prompt, shared, seed));
  }
  request.reported.resize(request.seqs.size());
  // The completions share prompt and params: the first one's checks decide for all.
  for (auto& seq : request.seqs) scheduler_.add(seq.get());
  requests_.emplace(request_id, std::move(request));
}

bool LLMEngine::abort_request(const std::string& request_id) {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return false;
  for (auto& seq : it->second.seqs)
    if (!seq->finished()) scheduler_.finish(seq.get(), FinishReason::abort);
  requests_.erase(it);
  return true;
}

void LLMEngine::record_prompt_logprobs(Sequence& seq, const ScheduledSequence& s,
                                       const float* rows) {
  const auto vocab = static_cast<std::size_t>(runner_.vocab_size());
  if (seq.prompt_logprobs.empty()) seq.prompt_logprobs.emplace_back();  // the first token: none
  for (int r = 0; r < s.num_new_tokens; ++r) {
    const int next = s.start + r + 1;  // the prompt token this row predicts
    if (next >= seq.num_prompt_tokens()) break;
    if (next != static_cast<int>(seq.prompt_logprobs.size())) continue;  // already recorded
    seq.prompt_logprobs.push_back(position_logprobs({rows + r * vocab, vocab},
                                                    seq.prompt_ids()[next],
                                                    *seq.params().prompt_logprobs));
  }
}

std::vector<RequestOutput> LLMEngine::step() {
  const StepPlan plan = scheduler_.schedule();
  if (plan.empty()) {
    // The scheduler's admission rules make this unreachable; never spin on it.
    if (has_unfinished_requests()) throw Error("engine: requests wait but none can be scheduled");
    return {};
  }
  ++num_steps_;
  prepare_batch(plan, scheduler_.block_manager().block_size(), batch_);
  std::vector<SamplerRow> rows;
  std::vector<Sequence*> sampled;
  for (const ScheduledSequence& s : plan.seqs) {
    if (!s.sample) continue;
    Sequence& seq = *s.seq;
    rows.push_back({{}, &seq.params(), seq.prompt_ids(), seq.output_ids(), config_.eos_token_ids,
                    &seq.rng()});
    sampled.push_back(&seq);
  }
  std::vector<SampledToken> tokens;
  if (std::none_of(plan.seqs.begin(), plan.seqs.end(),
                   [](const ScheduledSequence& s) { return s.prompt_logits; })) {
    tokens = runner_.execute_and_sample(batch_, rows);  // one logits row per sampled sequence
  } else {
    // Prompt logprobs need every prompt row on the host: the sampled rows are sampled there too.
    const std::span<const float> logits = runner_.execute(batch_);
    const auto vocab = static_cast<std::size_t>(runner_.vocab_size());
    std::size_t row = 0, next = 0;
    for (const ScheduledSequence& s : plan.seqs) {
      if (s.prompt_logits) record_prompt_logprobs(*s.seq, s, logits.data() + row * vocab);
      row += logits_rows_of(s);
      if (s.sample) rows[next++].logits = logits.subspan((row - 1) * vocab, vocab);
    }
    tokens = sample_batch(rows);
  }
  scheduler_.finish_step(plan);

  for (std::size_t i = 0; i < sampled.size(); ++i) {
    Sequence& seq = *sampled[i];
    seq.append_token(tokens[i].token);
    if (tokens[i].logprobs) seq.logprobs.push_back(*tokens[i].logprobs);
    const FinishReason reason = check_stop(seq, config_.eos_token_ids,
                                           scheduler_.config().max_model_len, detokenize_);
    if (reason != FinishReason::none) scheduler_.finish(&seq, reason);
  }

  std::vector<std::string> advanced;  // request ids, each once, in batch order
  std::unordered_set<std::string> seen;
  for (const Sequence* seq : sampled)
    if (seen.insert(seq->request_id()).second) advanced.push_back(seq->request_id());
  std::vector<RequestOutput> outputs;
  for (const std::string& id : advanced) {
    const auto it = requests_.find(id);
    std::optional<RequestOutput> out = output_of(id, it->second);
    if (!out) continue;
    if (out->finished) requests_.erase(it);
    outputs.push_back(std::move(*out));
  }
  return outputs;
}

std::vector<RequestOutput> LLMEngine::run_until_done() {
  std::vector<RequestOutput> finished;
  while (has_unfinished_requests())
    for (RequestOutput& out : step())
      if (out.finished) finished.push_back(std::move(out));
  return finished;
}

namespace {

// Text a delta may carry: while a stop string could still complete (and be cut off), its
// possible beginning is held back.
std::size_t reportable_text(const Sequence& seq) {
  const SamplingParams& p = seq.params();
  std::size_t end = seq.text.size();
  if (seq.finished() || p.include_stop_str_in_output) return end;
  std::size_t hold = 0;
  for (const std::string& stop : p.stop) hold = std::max(hold, stop.size() - 1);
  return end - std::min(end, hold);
}

}  // namespace

std::optional<RequestOutput> LLMEngine::output_of(const std::string& id, Request& request) const {
  const OutputKind kind = request.seqs.front()->params().output_kind;
  bool finished = true;
  for (const auto& seq : request.seqs) finished = finished && seq->finished();
  if (kind == OutputKind::final_only && !finished) return std::nullopt;
  const bool delta = kind == OutputKind::delta;

  RequestOutput out;
  out.request_id = id;
  out.finished = finished;
  out.num_cached_tokens = request.seqs.front()->num_cached_tokens;
  if (!delta || !request.prompt_reported) {
    out.prompt_token_ids = request.prompt;
    out.prompt_logprobs = request.seqs.front()->prompt_logprobs;
    request.prompt_reported = true;
  }
  for (std::size_t i = 0; i < request.seqs.size(); ++i) {
    const Sequence& seq = *request.seqs[i];
    Reported& reported = request.reported[i];
    const auto ids = seq.output_ids();
    const std::size_t from_token = delta ? reported.tokens : 0;
    const std::size_t text_end = std::max(reportable_text(seq), reported.text);
    const std::size_t from_text = delta ? reported.text : 0;
    CompletionOutput& c = out.outputs.emplace_back();
    c.index = seq.index();
    c.token_ids.assign(ids.begin() + from_token, ids.end());
    c.logprobs.assign(seq.logprobs.begin() + std::min(from_token, seq.logprobs.size()),
                      seq.logprobs.end());
    c.text = seq.text.substr(std::min(from_text, seq.text.size()), text_end - from_text);
    c.finish_reason = seq.finish_reason;
    c.stop_str = seq.stop_str;
    c.stop_token_id = seq.stop_token_id;
    reported = {ids.size(), text_end};
  }
  return out;
}

}  // namespace minivllm
