#include "engine/engine_core.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <unordered_map>

#include <minivllm/error.hpp>

#include "engine/decode_continuation.hpp"
#include "engine/prepare_batch.hpp"
#include "log/log.hpp"

namespace minivllm {
namespace {

struct Entry {
  std::unique_ptr<Sequence> seq;
  std::uint64_t seed = 0;
  bool on_worker = false;  // the worker has it (WorkerSeq sent)
  std::unique_ptr<TextStream> text;  // with stop strings: its text, for the stop check
};

// A step at the worker.
using Clock = std::chrono::steady_clock;

// At info, how often a busy engine says what it is doing.
constexpr std::chrono::seconds kLogInterval{5};

struct InFlight {
  StepPlan plan;
  // Every sequence of it has one new token, sampled (how its step time is counted).
  bool decodes_only = false;
  // Every running sequence decoded one token in it when it was planned. That holds until the next
  // plan: sequences only leave the running set in between (admission and preemption happen in
  // Scheduler::schedule alone).
  bool decodes_all_running = false;
  // Its live sequences' last tokens are placeholders for the ones it samples (the look-ahead
  // step after it decodes them; the worker fills them in). Set before they are all appended
  // when they go in with the tokens of the step before it (on_step_done).
  bool placeholders = false;
};

// A dropped sequence that a step at the worker still lists, kept until that step is back.
struct Retired {
  std::uint64_t last_step = 0;
  std::unique_ptr<Sequence> seq;
};

// What the periodic log line reports, since the last one (or the first step after idling).
struct ProgressLog {
  Clock::time_point since{};
  std::uint64_t generated = 0;  // tokens sampled
  std::uint64_t computed_prompt = 0;  // prompt tokens computed (batched tokens less sampled rows)
  std::uint64_t prefix_queries = 0;   // the block manager's totals when it began
  std::uint64_t prefix_hits = 0;
  std::uint64_t preempted = 0;        // since the last warning
  Clock::time_point warned{};
};

}  // namespace

struct EngineCore::State {
  EngineConfig config;
  std::unique_ptr<Scheduler> scheduler;
  TextStreams text_streams;
  std::unordered_map<SeqId, Entry> seqs;
  std::unordered_map<std::string, std::vector<SeqId>> requests;
  std::vector<std::string> pending_aborts;  // arrived while a step ran
  std::vector<std::uint64_t> released;      // for the worker's next step
  std::vector<SeqAdmitted> admitted;        // for the engine's next outputs
  std::vector<Retired> retired;
  std::mt19937_64 seed_source;
  std::uint64_t num_steps = 0;
  // The steps at the worker, oldest first: the running one, and at most one planned ahead.
  std::deque<InFlight> in_flight;
  std::vector<Batch> spare_batches;  // come back with the steps' results, refilled by the next
  std::vector<StepPlan> spare_plans;  // of returned steps, refilled by the next schedule
  // Sequences whose next placeholder stores their newest tokens: appended after the rows (reused).
  std::vector<Sequence*> storing;
  StepTimes step_times;
  SchedulerTurn turn;  // the phases of the turn on a step result, while it runs
  Clock::time_point turn_started{};
  std::size_t turn_timed_as = 0;  // the step_times bucket of the turn's step
  bool in_turn = false;
  ProgressLog progress;
};

namespace {

using SchedulerState = EngineCore::State;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Stands for a token the worker has sampled but the scheduler has not heard of yet.
constexpr std::int32_t kPlaceholderToken = -1;


// Stops a sequence and forgets it (its blocks go back to the pool now).
void drop(SchedulerState& st, Sequence& seq, FinishReason reason) {
  if (!seq.finished()) st.scheduler->finish(&seq, reason);
  const auto it = st.seqs.find(seq.id());
  if (it->second.on_worker) st.released.push_back(seq.id());
  auto& ids = st.requests.at(seq.request_id());
  std::erase(ids, seq.id());
  if (ids.empty()) st.requests.erase(seq.request_id());
  if (!st.in_flight.empty())
    st.retired.push_back({st.in_flight.back().plan.step, std::move(it->second.seq)});
  st.seqs.erase(it);
}

// A step is back: forgets it and the dropped sequences no step at the worker lists any more.
void step_returned(SchedulerState& st) {
  const std::uint64_t step = st.in_flight.front().plan.step;
  st.spare_plans.push_back(std::move(st.in_flight.front().plan));
  st.in_flight.pop_front();
  std::erase_if(st.retired, [&](const Retired& r) { return r.last_step <= step; });
}

// Ends every sequence of `request_id`, each with an update saying why.
void end_request(SchedulerState& st, const std::string& request_id, const std::string& error,
                 StepOutputs& out) {
  const auto it = st.requests.find(request_id);
  if (it == st.requests.end()) return;
  for (SeqId id : std::vector<SeqId>(it->second)) {
    Entry& e = st.seqs.at(id);
    Sequence& seq = *e.seq;
    SeqUpdate& u = out.updates.emplace_back();
    u.seq_id = id;
    u.finish_reason = FinishReason::abort;
    u.error = error;
    if (e.text) u.text = seq.text + e.text->finish();  // its text so far
    drop(st, seq, FinishReason::abort);
  }
}

// The sequences admitted since the last outputs go out with these (applied first).
void flush_admitted(SchedulerState& st, StepOutputs& out) {
  out.admitted.insert(out.admitted.end(), st.admitted.begin(), st.admitted.end());
  st.admitted.clear();
}

void fail_all(SchedulerState& st, const std::string& error, StepOutputs& out) {
  std::vector<std::string> ids;
  for (const auto& [id, seqs] : st.requests) ids.push_back(id);
  for (const std::string& id : ids) end_request(st, id, error, out);
  st.pending_aborts.clear();
  flush_admitted(st, out);
}

// Whether the running step `running` decodes every running sequence, none waits, and the free
// blocks cover a new one for each next decode, so that the step after it can be planned now,
// with no count of the blocks those decodes take (can_look_ahead has the count).
bool look_ahead_fits(const SchedulerState& st, const InFlight& running) {
  return running.decodes_all_running && st.scheduler->num_waiting() == 0 &&
         st.scheduler->num_running() <=
             static_cast<std::size_t>(st.scheduler->block_manager().num_free_blocks());
}

// Puts a step's sampled token into seq: in place of the look-ahead placeholder when there is one.
void take_token(Sequence& seq, std::int32_t token, bool placeholder) {
  if (placeholder) seq.set_last_token(token);
  else seq.append_token(token);
}

// Checks seq's new token (row `row` of the result) for a stop and tells the engine: the plain
// token, or an update when the sequence finished (then drops it) or asked for logprobs.
void report_token(SchedulerState& st, Sequence& seq, const StepResult& result, std::size_t row,
                  int max_model_len, StepOutputs& out) {
  const std::int32_t token = result.tokens[row];
  const bool logprobs = !result.logprobs.empty() && seq.wants_logprobs();
  // Only stop strings need the text; decoding it every step costs, so only then.
  const bool stop_strings = seq.has_stop_strings();
  const FinishReason finish = check_stop(seq, st.config.eos_token_ids, max_model_len,
                                         stop_strings ? st.seqs.at(seq.id()).text.get() : nullptr);
  if (finish == FinishReason::none && !logprobs) {
    // Field by field: a SeqToken built aside and copied whole stalls on store forwarding.
    SeqToken& t = out.tokens.emplace_back();
    t.seq_id = seq.id();
    t.token = token;
    return;
  }
  SeqUpdate& u = out.updates.emplace_back();
  u.seq_id = seq.id();
  u.token = token;
  if (logprobs) {
    seq.logprobs.push_back(result.logprobs[row]);
    u.logprobs.push_back(result.logprobs[row]);
  }
  u.finish_reason = finish;
  if (finish == FinishReason::none) return;
  if (seq.stop_str) {
    u.stop_str = *seq.stop_str;
    u.stop_str_set = true;
  }
  if (seq.stop_token_id) u.stop_token_id = *seq.stop_token_id;
  if (stop_strings) u.text = seq.text;
  drop(st, seq, finish);
}

// After a step's result: the debug line for it, and every kLogInterval the info line (running
// and waiting, tokens/s, KV-cache use, the prefix cache's hit rate over the interval).
void log_step(SchedulerState& st, const StepPlan& plan, const StepResult& result,
              Clock::time_point now) {
  ProgressLog& p = st.progress;
  p.generated += result.tokens.size();
  p.computed_prompt += static_cast<std::uint64_t>(plan.num_batched_tokens) - result.tokens.size();
  if (log_enabled(LogLevel::debug))
    log_line(LogLevel::debug,
             log_format("step %llu: %zu sequences, %d tokens, ran %.3f ms after %.3f ms idle",
                        static_cast<unsigned long long>(plan.step), plan.seqs.size(),
                        plan.num_batched_tokens, result.run_seconds * 1e3,
                        result.gap_seconds * 1e3));
  const BlockManager& blocks = st.scheduler->block_manager();
  if (p.since == Clock::time_point{}) p.since = now;
  const double seconds = std::chrono::duration<double>(now - p.since).count();
  if (now - p.since < kLogInterval) return;
  if (log_enabled(LogLevel::info)) {
    const std::uint64_t queries = blocks.prefix_cache_queries() - p.prefix_queries;
    const std::uint64_t hits = blocks.prefix_cache_hits() - p.prefix_hits;
    log_line(LogLevel::info,
             log_format("%zu running, %zu waiting; prompt %.1f tok/s, generation %.1f tok/s; "
                        "KV cache %.1f %% used; prefix cache hit rate %.1f %%",
                        st.scheduler->num_running(), st.scheduler->num_waiting(),
                        static_cast<double>(p.computed_prompt) / seconds,
                        static_cast<double>(p.generated) / seconds,
                        100.0 * (blocks.num_blocks() - blocks.num_free_blocks()) / blocks.num_blocks(),
                        queries > 0 ? 100.0 * static_cast<double>(hits) / static_cast<double>(queries)
                                    : 0.0));
  }
  p.since = now;
  p.generated = p.computed_prompt = 0;
  p.prefix_queries = blocks.prefix_cache_queries();
  p.prefix_hits = blocks.prefix_cache_hits();
}

// At warn, at most once every kLogInterval: sequences preempted because the KV cache ran out.
void warn_preempted(SchedulerState& st, std::size_t count) {
  ProgressLog& p = st.progress;
  p.preempted += count;
  const auto now = Clock::now();
  if (now - p.warned < kLogInterval || !log_enabled(LogLevel::warn)) return;
  log_line(LogLevel::warn,
           log_format("%llu sequences preempted (the KV cache is full; %llu since start): they "
                      "are recomputed later; more cache blocks or fewer scheduler.max_num_seqs "
                      "avoid it",
                      static_cast<unsigned long long>(p.preempted),
                      static_cast<unsigned long long>(st.scheduler->num_preemptions())));
  p.preempted = 0;
  p.warned = now;
}

// Puts a step's prompt logprobs into their sequences; a sequence that has them all sends them to
// the engine (the Scheduler plans prompt logits rows until then).
void take_prompt_logprobs(SchedulerState& st, std::vector<PromptLogprob>& prompt,
                          StepOutputs& out) {
  for (PromptLogprob& p : prompt) {
    const auto it = st.seqs.find(p.seq_id);
    if (it == st.seqs.end()) continue;  // dropped since
    Sequence& seq = *it->second.seq;
    if (seq.prompt_logprobs.empty()) seq.prompt_logprobs.emplace_back();  // the first token: none
    if (p.position != static_cast<std::int32_t>(seq.prompt_logprobs.size())) continue;  // had it
    seq.prompt_logprobs.push_back(std::move(p.logprobs));
    if (static_cast<int>(seq.prompt_logprobs.size()) < seq.num_prompt_tokens()) continue;
    SeqPromptLogprobs& all = out.prompt_logprobs.emplace_back();
    all.seq_id = p.seq_id;
    for (std::size_t i = 1; i < seq.prompt_logprobs.size(); ++i)
      all.logprobs.push_back(*seq.prompt_logprobs[i]);
  }
}

void complete(SchedulerState& st, StepResult& result, StepOutputs& out) {
  const auto started = Clock::now();
  st.turn = {};
  st.turn_started = started;
  st.in_turn = true;
  if (st.in_flight.empty())
    throw Error("engine core: a result for step " + std::to_string(result.step) +
                ", but no step is at the worker");
  st.spare_batches.push_back(std::move(result.spent_batch));
  const InFlight& done = st.in_flight.front();
  const StepPlan& plan = done.plan;
  // The scheduler's thread slept through the step: its sequences are cold. Ask for all of them
  // at once before the passes below touch them one by one. Their block ids (prepare_batch's)
  // are asked for row by row below, when a batch will be prepared: asked for here too, they held
  // up the lines the rows read.
  for (const ScheduledSequence& s : plan.seqs) s.seq->prefetch_state();
  out.tokens.reserve(out.tokens.size() + result.tokens.size());
  if (!result.prompt_logprobs.empty()) take_prompt_logprobs(st, result.prompt_logprobs, out);
  Scheduler& scheduler = *st.scheduler;
  const int max_model_len = scheduler.config().max_model_len;
  // When the step after the running one will be planned ahead (advance()), the running step's
  // placeholders go in with this step's tokens, while each sequence's line is at hand, instead
  // of in a pass of their own over the running step. Known before the rows: the rows and pending
  // aborts only take sequences out of the running set and give their blocks back. The running
  // step is this one's look-ahead (in_flight[1]), so its live sequences are this step's.
  const bool placeholders_now =
      st.in_flight.size() == 2 && look_ahead_fits(st, st.in_flight[1]);
  if (placeholders_now) st.in_flight[1].placeholders = true;
  // One pass over the step's sequences. Dropping one (finished) frees its blocks but changes no
  // other sequence's blocks or hashes, so each can be finished before the next is looked at.
  std::size_t row = 0;
  for (const ScheduledSequence& s : plan.seqs) {
    Sequence& seq = *s.seq;
    // For prepare_batch, a few microseconds from now. A step planned ahead continues the
    // running one (decode_continuation.hpp) and reads no block ids but a new block's.
    if (!placeholders_now) seq.prefetch_block_ids();
    if (seq.finished()) {  // dropped since it was planned: its token is discarded
      if (s.sample) ++row;
      continue;
    }
    // The token first: its look-ahead placeholder may sit in a block that finish_step hashes.
    if (s.sample) take_token(seq, result.tokens.at(row), done.placeholders);
    // Its next placeholder stores its newest tokens (to lines elsewhere): appended after the
    // rows (or by advance()), once they are loaded.
    const bool stores = seq.stores_on_next_append();
    if (stores) seq.prefetch_store();
    scheduler.finish_step(seq);
    if (s.sample) report_token(st, seq, result, row++, max_model_len, out);
    if (placeholders_now && !seq.finished()) {
      if (stores) st.storing.push_back(&seq);
      else seq.append_token(kPlaceholderToken);
    }
  }
  for (Sequence* seq : st.storing)
    if (!seq->finished()) seq->append_token(kPlaceholderToken);
  st.storing.clear();
  st.turn_timed_as =
      st.step_times.record(done.decodes_only, static_cast<std::int32_t>(plan.seqs.size()),
                           plan.num_batched_tokens, result.run_seconds, result.launch_seconds,
                           result.gap_seconds);
  for (const std::string& id : st.pending_aborts) end_request(st, id, "", out);
  st.pending_aborts.clear();
  log_step(st, plan, result, started);
  step_returned(st);
  flush_admitted(st, out);
  st.turn.tokens_seconds = seconds_since(started);
}

// The StepWork of `plan`; look_ahead: planned before the running step's tokens are back.
StepWork make_step(SchedulerState& st, StepPlan plan, bool look_ahead) {
  const auto started = Clock::now();
  ++st.num_steps;
  StepWork work;
  work.step = st.num_steps;
  work.look_ahead = look_ahead;
  if (!st.spare_batches.empty()) {
    work.batch = std::move(st.spare_batches.back());
    st.spare_batches.pop_back();
  }
  const int block_size = st.scheduler->block_manager().block_size();
  // A look-ahead step continues the running one (decode_continuation.hpp): the worker builds
  // its batch and sample ids from that step's, and this turn skips them. It decodes only.
  // (A look-ahead step's running step is the one sent last.)
  if (look_ahead &&
      describe_continuation(st.in_flight.back().plan, plan, block_size, work.continuation))
    work.continues_step = work.step - 1;
  bool decodes_only = true;
  if (work.continues_step == 0) {
    prepare_batch(plan, block_size, work.batch);
    work.sample_seq_ids.reserve(plan.seqs.size());
    bool prompt_logits = false;
    for (const ScheduledSequence& s : plan.seqs) {
      decodes_only = decodes_only && s.sample && s.num_new_tokens == 1;
      prompt_logits = prompt_logits || s.prompt_logits;
      // A look-ahead step has only sequences of the step before it, and a sequence with output
      // tokens was sampled by the worker: only the others may be new to it (no lookup per
      // decode).
      if (!look_ahead && s.seq->num_output_tokens() == 0) {
        Entry& e = st.seqs.at(s.seq->id());
        if (!e.on_worker) {
          const auto prompt = s.seq->prompt_ids();
          work.new_seqs.push_back(
              {s.seq->id(), s.seq->params(), {prompt.begin(), prompt.end()}, e.seed});
          e.on_worker = true;
          st.admitted.push_back({s.seq->id(), s.seq->num_cached_tokens});
        }
      }
      if (s.sample) work.sample_seq_ids.push_back(s.seq->id());
    }
    if (prompt_logits)
      for (const ScheduledSequence& s : plan.seqs)
        work.logits_layout.push_back(
            {s.seq->id(), s.start, logits_rows_of(s),
             s.prompt_logits ? *s.seq->params().prompt_logprobs : -1});
  }
  work.released_seq_ids.swap(st.released);
  const bool decodes_all_running = decodes_only && plan.seqs.size() == st.scheduler->num_running();
  st.in_flight.push_back({std::move(plan), decodes_only, decodes_all_running, false});
  st.turn.batch_seconds += seconds_since(started);
  return work;
}

// Whether the step after the running one can be planned now, before its tokens are back: when
// it is certain to be the running step's decodes again. Every running sequence decodes in the
// running step, none waits, and the free blocks cover each next decode's new block, so the
// next plan admits and preempts nothing. Not when the running step's tokens are the last of
// every sequence in it (by max_tokens or max_model_len): that step would only compute rows that
// finish unused, and a request arriving meanwhile would wait behind it (a single stream's next
// request: one decode step more to its first token).
bool can_look_ahead(const SchedulerState& st) {
  if (st.in_flight.size() != 1 || st.scheduler->num_waiting() != 0) return false;
  const InFlight& running = st.in_flight.front();
  const std::size_t live = st.scheduler->num_running();  // all in the running step
  if (!running.decodes_all_running || live == 0) return false;
  const int in_flight_token = running.placeholders ? 0 : 1;  // not yet counted in num_tokens()
  const bool any_goes_on = std::any_of(
      running.plan.seqs.begin(), running.plan.seqs.end(), [&](const ScheduledSequence& s) {
        return !s.seq->finished() &&
               s.seq->num_tokens() + in_flight_token < st.scheduler->longest_of(*s.seq);
      });
  if (!any_goes_on) return false;
  // A decode needs at most one new block: with one free per sequence, nothing to count.
  if (look_ahead_fits(st, running)) return true;
  const BlockManager& blocks = st.scheduler->block_manager();
  int new_blocks = 0;
  for (const ScheduledSequence& s : running.plan.seqs) {
    const Sequence& seq = *s.seq;
    // The next decode writes KV for the token in flight too (blocks_for without a division).
    if (!seq.finished() &&
        seq.num_tokens() + 1 > static_cast<int>(seq.block_ids.size()) * blocks.block_size())
      ++new_blocks;
  }
  return new_blocks <= blocks.num_free_blocks();
}

// The scheduler's next plan, refilling a returned step's (its vectors keep their capacity).
StepPlan next_plan(SchedulerState& st) {
  const auto started = Clock::now();
  StepPlan plan;
  if (!st.spare_plans.empty()) {
    plan = std::move(st.spare_plans.back());
    st.spare_plans.pop_back();
  }
  st.scheduler->schedule(plan);
  if (!plan.preempted.empty()) warn_preempted(st, plan.preempted.size());
  st.turn.plan_seconds += seconds_since(started);
  return plan;
}

// Keeps the worker fed: a step when none runs, and the next one while one runs when it can be
// planned ahead (so the worker never waits for the scheduler to hear back).
std::optional<StepWork> next_step(SchedulerState& st, StepOutputs& out) {
  if (st.in_flight.empty()) {
    if (!st.scheduler->has_unfinished()) return std::nullopt;
    StepPlan plan = next_plan(st);
    if (plan.empty()) {
      // The scheduler's admission rules make this unreachable; never spin on it.
      fail_all(st, "scheduler: requests wait but none can be scheduled", out);
      return std::nullopt;
    }
    return make_step(st, std::move(plan), false);
  }
  if (!can_look_ahead(st)) return std::nullopt;
  InFlight& running = st.in_flight.front();
  if (!running.placeholders) {  // not put in with the last step's tokens
    const auto started = Clock::now();
    for (const ScheduledSequence& s : running.plan.seqs)
      if (!s.seq->finished()) s.seq->append_token(kPlaceholderToken);
    running.placeholders = true;
    st.turn.plan_seconds += seconds_since(started);
  }
  StepPlan plan = next_plan(st);
  if (plan.empty()) return std::nullopt;
  return make_step(st, std::move(plan), true);
}

void add(SchedulerState& st, SeqRequest& req) {
  if (st.requests.count(req.request_id) != 0)
    throw Error("request " + req.request_id + ": a request with this id is already running");
  if (!req.params.stop.empty() && !st.text_streams)
    throw Error("request " + req.request_id +
                ": stop strings need a tokenizer, and this engine has none");
  const auto params = std::make_shared<const SamplingParams>(std::move(req.params));
  std::vector<SeqId> ids;
  try {
    for (int i = 0; i < params->n; ++i) {
      // A seeded request's completion i uses seed + i (as vLLM does), whatever else runs.
      const std::uint64_t seed = params->seed ? *params->seed + i : st.seed_source();
      const SeqId id = req.first_seq_id + static_cast<SeqId>(i);
      auto seq = std::make_unique<Sequence>(id, req.request_id, i, req.prompt, params, seed);
      Sequence* raw = seq.get();
      st.seqs.emplace(id, Entry{std::move(seq), seed, false,
                                params->stop.empty() ? nullptr
                                                    : st.text_streams(params->skip_special_tokens)});
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

EngineCore::EngineCore(const EngineConfig& config, TextStreams text_streams)
    : st_(std::make_unique<State>()) {
  st_->scheduler = std::make_unique<Scheduler>(config.scheduler, config.cache);
  st_->seed_source.seed(config.seed);
  st_->config = config;
  st_->text_streams = std::move(text_streams);
}

EngineCore::~EngineCore() = default;

void EngineCore::add(SeqRequest& request) { minivllm::add(*st_, request); }

bool EngineCore::abort(const std::string& request_id, StepOutputs& out) {
  State& st = *st_;
  if (st.requests.count(request_id) == 0) return false;
  if (!st.in_flight.empty()) {
    st.pending_aborts.push_back(request_id);  // its blocks may be in use right now
  } else {
    end_request(st, request_id, "", out);
    flush_admitted(st, out);
  }
  return true;
}

std::optional<StepWork> EngineCore::next_step(StepOutputs& out) {
  return minivllm::next_step(*st_, out);
}

void EngineCore::complete(StepResult& result, StepOutputs& out) {
  minivllm::complete(*st_, result, out);
}

void EngineCore::end_turn() {
  State& st = *st_;
  if (!st.in_turn) return;
  st.in_turn = false;
  st.turn.seconds = seconds_since(st.turn_started);
  st.step_times.add_scheduler_turn(st.turn_timed_as, st.turn);
}

void EngineCore::fail_step(const std::string& error, StepOutputs& out) {
  State& st = *st_;
  if (st.in_flight.empty()) {
    minivllm::fail_all(st, error, out);
    return;
  }
  // The requests with a sequence in the step end with its error; the others go on. (A step
  // planned ahead of it has only its sequences: its answer, failed or not, ends nothing more.)
  std::vector<std::string> failed;
  for (const ScheduledSequence& s : st.in_flight.front().plan.seqs)
    if (!s.seq->finished() && std::find(failed.begin(), failed.end(), s.seq->request_id()) ==
                                  failed.end())
      failed.push_back(s.seq->request_id());
  step_returned(st);
  for (const std::string& id : failed) end_request(st, id, error, out);
  if (st.in_flight.empty()) {
    for (const std::string& id : st.pending_aborts) end_request(st, id, "", out);
    st.pending_aborts.clear();
  }
  flush_admitted(st, out);
}

void EngineCore::fail_all(const std::string& error, StepOutputs& out) {
  State& st = *st_;
  while (!st.in_flight.empty()) step_returned(st);
  minivllm::fail_all(st, error, out);
}

void EngineCore::forget_cached_prefixes() { st_->scheduler->forget_cached_prefixes(); }

bool EngineCore::has_unfinished() const { return st_->scheduler->has_unfinished(); }
bool EngineCore::step_running() const { return !st_->in_flight.empty(); }
const Scheduler& EngineCore::scheduler() const { return *st_->scheduler; }
std::uint64_t EngineCore::num_steps() const { return st_->num_steps; }
const StepTimes& EngineCore::step_times() const { return st_->step_times; }

}  // namespace minivllm
