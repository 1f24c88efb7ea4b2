#include "actors/engine_actor.hpp"

#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include <minivllm/error.hpp>

#include "actors/runtime_error.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/token_text.hpp"
#include "log/log.hpp"
#include "tokenizer/incremental_decoder.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

struct Pending {
  caf::typed_response_promise<RequestOutput> promise;
  delta_sink sink;
  caf::actor_addr requester;
  RequestOutput output;
  // One per completion while its text streams; requests with stop strings get their text at the
  // end, since a stop string can cut text already decoded.
  std::vector<IncrementalDecoder> decoders;
  int num_unfinished = 0;
  std::uint64_t first_seq_id = 0;  // completion i is sequence first_seq_id + i
  Clock::time_point arrival;
  std::vector<Clock::time_point> last_token;  // per completion: when its newest token came
};

struct EngineState {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::int32_t vocab_size = 0;
  scheduler_actor scheduler;
  std::unordered_map<std::string, Pending> requests;
  std::unordered_map<std::uint64_t, Pending*> by_seq;  // each sequence's request, while it runs
  std::unordered_set<caf::actor_addr> monitored;
  std::uint64_t next_id = 0;
  std::uint64_t next_seq_id = 0;
  // The request counters (EngineStats::counters); the scheduler keeps the prefix cache's.
  EngineCounters counters;
  Clock::time_point now;  // of the step outputs being applied
};

using pointer = engine_impl_actor::stateful_pointer<EngineState>;

std::vector<std::int32_t> prompt_of(const EngineState& st, const GenerateRequest& req) {
  if (!req.messages.empty()) {
    if (!st.tokenizer) throw Error("chat messages need a tokenizer, and this engine has none");
    const ChatFamily family = chat_family_from_template(st.tokenizer->chat_template());
    // The template writes every special token itself (as apply_chat_template does).
    return st.tokenizer->encode(format_chat(family, req.messages, ChatOptions{}), false);
  }
  if (!req.prompt_token_ids.empty()) return req.prompt_token_ids;
  if (!st.tokenizer) throw Error("a text prompt needs a tokenizer, and this engine has none");
  return st.tokenizer->encode(req.prompt);
}

void validate(const EngineState& st, const SamplingParams& params,
              const std::vector<std::int32_t>& prompt) {
  params.validate();
  if (!params.stop.empty() && !st.tokenizer)
    throw Error("stop strings need a tokenizer, and this engine has none");
  for (std::int32_t id : prompt)
    if (id < 0 || id >= st.vocab_size)
      throw Error("prompt token id " + std::to_string(id) + " is outside [0, " +
                  std::to_string(st.vocab_size) + ")");
}

// Takes a request out of the tables, to be answered.
auto take(EngineState& st, Pending& p) {
  for (std::size_t i = 0; i < p.output.outputs.size(); ++i) st.by_seq.erase(p.first_seq_id + i);
  return st.requests.extract(p.output.request_id);
}

// A request ends: its end-to-end latency and why, once.
void count_end(EngineState& st, const Pending& p, FinishReason reason, bool error) {
  st.counters.count_finished(reason, error);
  st.counters.e2e_request_latency.observe(seconds_between(p.arrival, Clock::now()));
}

void deliver(EngineState& st, Pending& p, FinishReason reason) {
  count_end(st, p, reason, false);
  auto taken = take(st, p);
  Pending& q = taken.mapped();
  q.output.finished = true;
  q.promise.deliver(std::move(q.output));
}

void fail(EngineState& st, Pending& p, const std::string& error) {
  count_end(st, p, FinishReason::abort, true);
  auto taken = take(st, p);
  Pending& q = taken.mapped();
  q.promise.deliver(runtime_error("request " + q.output.request_id + ": " + error));
}

// Completion `index` of `p` got `token` (-1: none) in a step; `u`, when set, says what else.
void apply(pointer self, Pending& p, std::size_t index, std::int32_t token, const SeqUpdate* u) {
  auto& st = self->state;
  CompletionOutput& c = p.output.outputs.at(index);
  if (token >= 0) {
    c.token_ids.push_back(token);
    ++st.counters.generation_tokens;
    if (c.token_ids.size() > 1) {
      st.counters.inter_token_latency.observe(seconds_between(p.last_token[index], st.now));
    } else if (index == 0) {  // the request's first token
      st.counters.time_to_first_token.observe(seconds_between(p.arrival, st.now));
      st.counters.prompt_tokens += p.output.prompt_token_ids.size();
    }
    p.last_token[index] = st.now;
  }
  const FinishReason finish = u ? u->finish_reason : FinishReason::none;
  const bool finished = finish != FinishReason::none;
  RequestDelta delta;
  if (!p.decoders.empty()) {
    if (token >= 0 && has_text(*st.tokenizer, token)) delta.text = p.decoders[index].push(token);
    if (finished) delta.text += p.decoders[index].finish();
    c.text += delta.text;
  } else if (finished && st.tokenizer) {
    c.text = finish == FinishReason::abort ? decode_known(*st.tokenizer, c.token_ids) : u->text;
    delta.text = c.text;
  }
  if (u) {
    c.logprobs.insert(c.logprobs.end(), u->logprobs.begin(), u->logprobs.end());
    if (finished) {
      c.finish_reason = finish;
      if (u->stop_str_set) c.stop_str = u->stop_str;
      if (u->stop_token_id >= 0) c.stop_token_id = u->stop_token_id;
    }
  }
  if (p.sink) {
    delta.request_id = p.output.request_id;
    delta.index = static_cast<std::int32_t>(index);
    if (token >= 0) delta.token_ids.push_back(token);
    delta.finished = finished;
    self->send(p.sink, std::move(delta));
  }
  if (finished && --p.num_unfinished == 0) deliver(st, p, finish);
}

void apply(pointer self, StepOutputs& out) {
  auto& st = self->state;
  st.now = Clock::now();
  for (const SeqAdmitted& a : out.admitted) {
    const auto it = st.by_seq.find(a.seq_id);
    if (it == st.by_seq.end() || a.seq_id != it->second->first_seq_id) continue;
    // The request's first completion speaks for it: they share the prompt.
    Pending& p = *it->second;
    p.output.num_cached_tokens = a.num_cached_tokens;
    st.counters.request_queue_time.observe(seconds_between(p.arrival, st.now));
  }
  for (SeqPromptLogprobs& l : out.prompt_logprobs) {
    const auto it = st.by_seq.find(l.seq_id);
    if (it == st.by_seq.end() || l.seq_id != it->second->first_seq_id) continue;
    auto& prompt = it->second->output.prompt_logprobs;
    prompt.assign(1, std::nullopt);  // the first prompt token has none
    for (PositionLogprobs& p : l.logprobs) prompt.emplace_back(std::move(p));
  }
  // A sequence that is not known any more belongs to a request already answered (shut down or
  // failed).
  for (const SeqToken& t : out.tokens) {
    const auto it = st.by_seq.find(t.seq_id);
    if (it == st.by_seq.end()) continue;
    Pending& p = *it->second;
    apply(self, p, t.seq_id - p.first_seq_id, t.token, nullptr);
  }
  for (const SeqUpdate& u : out.updates) {
    const auto it = st.by_seq.find(u.seq_id);
    if (it == st.by_seq.end()) continue;
    Pending& p = *it->second;
    if (!u.error.empty()) fail(st, p, u.error);
    else apply(self, p, u.seq_id - p.first_seq_id, u.token, &u);
  }
}

caf::result<RequestOutput> submit(pointer self, GenerateRequest& req, delta_sink& sink) {
  auto& st = self->state;
  const std::string id = req.request_id.empty() ? "req-" + std::to_string(st.next_id++) : req.request_id;
  std::vector<std::int32_t> prompt;
  try {
    if (st.requests.count(id) != 0) throw Error("a request with this id is already running");
    prompt = prompt_of(st, req);
    validate(st, req.params, prompt);
  } catch (const std::exception& e) {
    log_line(LogLevel::warn, "request " + id + " refused: " + e.what());
    return runtime_error("request " + id + ": " + e.what());
  }
  Pending p;
  // Before the promise: making it takes the sender out of the current message.
  if (const caf::strong_actor_ptr& sender = self->current_sender()) {
    p.requester = caf::actor_cast<caf::actor_addr>(sender);
    if (st.monitored.insert(p.requester).second) self->monitor(sender);
  }
  p.promise = self->make_response_promise<RequestOutput>();
  p.arrival = Clock::now();
  p.last_token.resize(static_cast<std::size_t>(req.params.n));
  p.sink = std::move(sink);
  p.output.request_id = id;
  p.output.prompt_token_ids = prompt;
  p.num_unfinished = req.params.n;
  p.first_seq_id = st.next_seq_id;
  st.next_seq_id += static_cast<std::uint64_t>(req.params.n);
  for (int i = 0; i < req.params.n; ++i) {
    p.output.outputs.emplace_back().index = i;
    if (st.tokenizer && req.params.stop.empty())
      p.decoders.emplace_back(*st.tokenizer, /*skip_special_tokens=*/true);
  }
  auto promise = p.promise;
  Pending& pending = st.requests.emplace(id, std::move(p)).first->second;
  for (int i = 0; i < req.params.n; ++i) st.by_seq.emplace(pending.first_seq_id + i, &pending);
  self->request(st.scheduler, caf::infinite,
                SeqRequest{id, pending.first_seq_id, std::move(prompt), std::move(req.params)})
      .then([](bool) {},
            [self, id](caf::error& err) {
              auto& st = self->state;
              const auto it = st.requests.find(id);
              if (it != st.requests.end()) fail(st, it->second, error_text(self->system(), err));
            });
  return promise;
}

// Answers every request with what it has so far, finish_reason abort.
void abort_all(EngineState& st) {
  for (auto& [id, p] : st.requests) {
    for (std::size_t i = 0; i < p.output.outputs.size(); ++i) {
      CompletionOutput& c = p.output.outputs[i];
      if (c.finish_reason != FinishReason::none) continue;
      c.finish_reason = FinishReason::abort;
      if (!p.decoders.empty()) c.text += p.decoders[i].finish();
    }
    p.output.finished = true;
    count_end(st, p, FinishReason::abort, false);
    p.promise.deliver(std::move(p.output));
  }
  st.requests.clear();
  st.by_seq.clear();
}

}  // namespace

engine_actor spawn_engine(caf::actor_system& sys, const RuntimeSpec& spec, std::int32_t vocab_size,
                          worker_actor worker) {
  Detokenizer detokenize;
  if (spec.tokenizer)
    detokenize = [tok = spec.tokenizer](std::span<const std::int32_t> ids) {
      return decode_known(*tok, ids);
    };
  engine_impl_actor engine = sys.spawn(
      [](pointer self, std::shared_ptr<const Tokenizer> tokenizer, std::int32_t vocab,
         worker_actor worker, EngineConfig config,
         Detokenizer detokenize) -> engine_impl_actor::behavior_type {
        auto& st = self->state;
        st.tokenizer = std::move(tokenizer);
        st.vocab_size = vocab;
        st.scheduler = spawn_scheduler(self->system(), config, std::move(detokenize),
                                       caf::actor_cast<step_output_sink>(self), worker);
        self->link_to(st.scheduler);
        self->link_to(worker);
        self->set_down_handler([self](caf::down_msg& down) {
          auto& st = self->state;
          st.monitored.erase(down.source);
          for (const auto& [id, p] : st.requests)
            if (p.requester == down.source)
              self->request(st.scheduler, caf::infinite, abort_atom_v, id).then([](bool) {});
        });
        return {
            [self](GenerateRequest& req, delta_sink& sink) { return submit(self, req, sink); },
            [self](abort_atom, std::string& id) {
              return self->delegate(self->state.scheduler, abort_atom_v, std::move(id));
            },
            [self](stats_atom) -> caf::result<EngineStats> {
              // The scheduler's snapshot, with the request counters this actor keeps.
              auto promise = self->make_response_promise<EngineStats>();
              self->request(self->state.scheduler, caf::infinite, stats_atom_v)
                  .then(
                      [self, promise](EngineStats& stats) mutable {
                        const EngineCounters& blocks = stats.counters;
                        EngineCounters counters = self->state.counters;
                        counters.prefix_cache_queries = blocks.prefix_cache_queries;
                        counters.prefix_cache_hits = blocks.prefix_cache_hits;
                        stats.counters = std::move(counters);
                        promise.deliver(std::move(stats));
                      },
                      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
              return promise;
            },
            [self](shutdown_atom) {
              abort_all(self->state);
              // Links take the scheduler and the worker down with the engine.
              self->quit(caf::exit_reason::user_shutdown);
            },
            [self](StepOutputs& out) { apply(self, out); },
        };
      },
      spec.tokenizer, vocab_size, std::move(worker), spec.engine, std::move(detokenize));
  return engine;
}

}  // namespace minivllm
