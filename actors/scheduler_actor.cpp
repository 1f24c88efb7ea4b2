#include "actors/scheduler_actor.hpp"

#include <random>
#include <unordered_map>

#include <caf/all.hpp>

#include <minivllm/error.hpp>

#include <minivllm/actors/runtime.hpp>
#include "actors/runtime_error.hpp"
#include "engine/prepare_batch.hpp"

namespace minivllm {
namespace {

struct Entry {
  std::unique_ptr<Sequence> seq;
  std::uint64_t seed = 0;
  bool on_worker = false;  // the worker has it (WorkerSeq sent)
};

struct SchedulerState {
  EngineConfig config;
  std::unique_ptr<Scheduler> scheduler;
  Detokenizer detokenize;
  step_output_sink engine;
  worker_actor worker;
  std::unordered_map<SeqId, Entry> seqs;
  std::unordered_map<std::string, std::vector<SeqId>> requests;
  std::vector<std::string> pending_aborts;  // arrived while a step ran
  std::vector<std::uint64_t> released;      // for the worker's next step
  std::mt19937_64 seed_source;
  SeqId next_seq_id = 0;
  std::uint64_t num_steps = 0;
  bool busy = false;  // a step is at the worker
  StepPlan plan;      // the step at the worker
};

using pointer = scheduler_actor::stateful_pointer<SchedulerState>;

// Stops a sequence and forgets it (its blocks go back to the pool now).
void drop(SchedulerState& st, Sequence& seq, FinishReason reason) {
  if (!seq.finished()) st.scheduler->finish(&seq, reason);
  const auto it = st.seqs.find(seq.id());
  if (it->second.on_worker) st.released.push_back(seq.id());
  auto& ids = st.requests.at(seq.request_id());
  std::erase(ids, seq.id());
  if (ids.empty()) st.requests.erase(seq.request_id());
  st.seqs.erase(it);
}

// Ends every sequence of `request_id`, each with an update saying why.
void end_request(SchedulerState& st, const std::string& request_id, const std::string& error,
                 StepOutputs& out) {
  const auto it = st.requests.find(request_id);
  if (it == st.requests.end()) return;
  for (SeqId id : std::vector<SeqId>(it->second)) {
    Sequence& seq = *st.seqs.at(id).seq;
    SeqUpdate& u = out.updates.emplace_back();
    u.request_id = request_id;
    u.index = seq.index();
    u.finish_reason = FinishReason::abort;
    u.error = error;
    drop(st, seq, FinishReason::abort);
  }
}

void send_outputs(pointer self, StepOutputs& out) {
  if (!out.updates.empty()) self->send(self->state.engine, std::move(out));
}

void fail_all(pointer self, const std::string& error) {
  auto& st = self->state;
  StepOutputs out;
  std::vector<std::string> ids;
  for (const auto& [id, seqs] : st.requests) ids.push_back(id);
  for (const std::string& id : ids) end_request(st, id, error, out);
  st.pending_aborts.clear();
  send_outputs(self, out);
}

void step(pointer self);

void on_step_done(pointer self, StepResult& result) {
  auto& st = self->state;
  st.scheduler->finish_step(st.plan);
  StepOutputs out;
  out.updates.reserve(result.tokens.size());
  std::size_t row = 0;
  for (const ScheduledSequence& s : st.plan.seqs) {
    if (!s.sample) continue;
    Sequence& seq = *s.seq;
    const std::int32_t token = result.tokens.at(row);
    seq.append_token(token);
    SeqUpdate& u = out.updates.emplace_back();
    u.request_id = seq.request_id();
    u.index = seq.index();
    u.token = token;
    if (!result.logprobs.empty() && seq.params().logprobs) {
      seq.logprobs.push_back(result.logprobs[row]);
      u.logprobs.push_back(result.logprobs[row]);
    }
    ++row;
    // Only stop strings need the text; decoding it every step costs, so only then.
    const bool stop_strings = !seq.params().stop.empty();
    u.finish_reason = check_stop(seq, st.config.eos_token_ids, st.scheduler->config().max_model_len,
                                 stop_strings ? st.detokenize : Detokenizer{});
    if (u.finish_reason == FinishReason::none) continue;
    if (seq.stop_str) {
      u.stop_str = *seq.stop_str;
      u.stop_str_set = true;
    }
    if (seq.stop_token_id) u.stop_token_id = *seq.stop_token_id;
    if (stop_strings) u.text = seq.text;
    drop(st, seq, u.finish_reason);
  }
  for (const std::string& id : st.pending_aborts) end_request(st, id, "", out);
  st.pending_aborts.clear();
  st.busy = false;
  send_outputs(self, out);
  step(self);
}

// Starts the next step unless one runs or nothing is left.
void step(pointer self) {
  auto& st = self->state;
  if (st.busy || !st.scheduler->has_unfinished()) return;
  st.plan = st.scheduler->schedule();
  if (st.plan.empty()) {
    // The scheduler's admission rules make this unreachable; never spin on it.
    fail_all(self, "scheduler: requests wait but none can be scheduled");
    return;
  }
  ++st.num_steps;
  StepWork work;
  work.step = st.num_steps;
  prepare_batch(st.plan, st.scheduler->block_manager().block_size(), work.batch);
  work.sample_seq_ids.reserve(st.plan.seqs.size());
  for (const ScheduledSequence& s : st.plan.seqs) {
    Entry& e = st.seqs.at(s.seq->id());
    if (!e.on_worker) {
      const auto prompt = s.seq->prompt_ids();
      work.new_seqs.push_back(
          {s.seq->id(), s.seq->params(), {prompt.begin(), prompt.end()}, e.seed});
      e.on_worker = true;
    }
    if (s.sample) work.sample_seq_ids.push_back(s.seq->id());
  }
  work.released_seq_ids.swap(st.released);
  st.busy = true;
  self->request(st.worker, caf::infinite, std::move(work))
      .then([self](StepResult& result) { on_step_done(self, result); },
            [self](caf::error& err) {
              self->state.busy = false;
              fail_all(self, error_text(self->system(), err));
            });
}

void add(SchedulerState& st, SeqRequest& req) {
  if (st.requests.count(req.request_id) != 0)
    throw Error("request " + req.request_id + ": a request with this id is already running");
  const auto params = std::make_shared<const SamplingParams>(std::move(req.params));
  std::vector<SeqId> ids;
  try {
    for (int i = 0; i < params->n; ++i) {
      // A seeded request's completion i uses seed + i (as vLLM does), whatever else runs.
      const std::uint64_t seed = params->seed ? *params->seed + i : st.seed_source();
      const SeqId id = st.next_seq_id++;
      auto seq = std::make_unique<Sequence>(id, req.request_id, i, req.prompt, params, seed);
      Sequence* raw = seq.get();
      st.seqs.emplace(id, Entry{std::move(seq), seed, false});
      ids.push_back(id);
      st.requests[req.request_id].push_back(id);
      st.scheduler->add(raw);
    }
  } catch (...) {
    StepOutputs ignored;
    end_request(st, req.request_id, "", ignored);
    throw;
  }
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, const EngineConfig& config,
                                Detokenizer detokenize, step_output_sink engine,
                                worker_actor worker) {
  return sys.spawn(
      [](pointer self, EngineConfig config, Detokenizer detokenize, step_output_sink engine,
         worker_actor worker) -> scheduler_actor::behavior_type {
        auto& st = self->state;
        st.scheduler = std::make_unique<Scheduler>(config.scheduler, config.cache);
        st.seed_source.seed(config.seed);
        st.config = std::move(config);
        st.detokenize = std::move(detokenize);
        st.engine = std::move(engine);
        st.worker = std::move(worker);
        return {
            [self](SeqRequest& req) -> caf::result<bool> {
              try {
                add(self->state, req);
              } catch (const std::exception& e) {
                return runtime_error(e.what());
              }
              step(self);
              return true;
            },
            [self](abort_atom, const std::string& request_id) {
              auto& st = self->state;
              if (st.requests.count(request_id) == 0) return false;
              if (st.busy) {
                st.pending_aborts.push_back(request_id);  // its blocks may be in use right now
              } else {
                StepOutputs out;
                end_request(st, request_id, "", out);
                send_outputs(self, out);
              }
              return true;
            },
            [self](stats_atom) {
              const auto& st = self->state;
              const BlockManager& blocks = st.scheduler->block_manager();
              return EngineStats{st.num_steps,
                                 st.scheduler->num_running(),
                                 st.scheduler->num_waiting(),
                                 st.scheduler->num_preemptions(),
                                 static_cast<std::uint64_t>(blocks.num_free_blocks()),
                                 static_cast<std::uint64_t>(blocks.num_blocks()),
                                 st.scheduler->check_invariants()};
            },
        };
      },
      config, std::move(detokenize), std::move(engine), std::move(worker));
}

}  // namespace minivllm
