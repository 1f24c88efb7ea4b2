#include "engine/step_executor.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>

#include <minivllm/error.hpp>

#include "backend/cpu_sampler.hpp"
#include "engine/decode_continuation.hpp"

namespace minivllm {
namespace {

// What the worker remembers of a sequence to sample it: the worker appends the tokens it
// samples, so only new sequences travel, once.
struct SampledSeq {
  SamplingParams params;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> output;
  std::mt19937_64 rng;
  // Its row in step `queued_step` (0: none), while that step is queued on the device.
  std::uint64_t queued_step = 0;
  std::int32_t queued_row = -1;
};

using Clock = std::chrono::steady_clock;

// A step on the device whose tokens have not been collected (ModelRunner::queue_step).
struct QueuedStep {
  StepWork work;
  std::vector<SampledSeq*> seqs;  // its rows' sequences, in row order
  Clock::time_point queued_at;
  double launch_seconds = 0;      // the host's time queuing it
};

}  // namespace

struct StepExecutor::State {
  ModelRunner* runner = nullptr;
  std::vector<std::int32_t> eos_ids;
  std::unordered_map<std::uint64_t, SampledSeq> seqs;
  std::optional<Clock::time_point> last_step_end;
  StepAnswers* answers = nullptr;  // the current call's
  // Between jobs at most one step waits on the device: the next job queues its step behind it
  // (fed by it when it can be) before collecting it, so the device never waits for the host.
  std::optional<QueuedStep> queued;
  // A step's rows, in row order: kept so that no step allocates them anew.
  std::vector<SampledSeq*> spare_seqs;
  std::vector<SamplerRow> rows;
  // The last one-token decode step's batch and sample ids, which the next step may continue
  // (StepWork::continues_step), and its number. Swapped in once the runner has read the step:
  // the batch it replaces goes back to the scheduler as the spent one.
  Batch last_batch;
  std::vector<std::uint64_t> last_seq_ids;
  std::uint64_t last_step = 0;
};

namespace {

using WorkerState = StepExecutor::State;

// The sequences of work's rows into `seqs` and their sampler rows into st.rows, in row order.
void gather_rows(WorkerState& st, const StepWork& work, std::vector<SampledSeq*>& seqs) {
  seqs.clear();
  st.rows.clear();
  for (std::uint64_t id : work.sample_seq_ids) {
    SampledSeq& s = *seqs.emplace_back(&st.seqs.at(id));
    st.rows.push_back({{}, &s.params, s.prompt, s.output, st.eos_ids, &s.rng});
  }
}

// Clears every array of `batch`, keeping their capacity.
void clear_arrays(Batch& batch) {
  for (auto* v : {&batch.token_ids, &batch.positions, &batch.query_start, &batch.context_lens,
                  &batch.block_tables, &batch.logits_rows})
    v->clear();
  batch.slot_mapping.clear();
  batch.max_blocks_per_seq = 0;
}

// Answers a step with its sampled tokens (appended to its sequences too) and its times: it ran
// from `start` (on the device, as far as the worker can tell) to now, `launch_seconds` of it
// queuing. Its arrays go back.
void answer(WorkerState& st, StepWork& work, std::vector<SampledSeq*>& seqs,
            std::vector<SampledToken>& sampled, Clock::time_point start,
            double launch_seconds = 0, std::vector<PromptLogprob> prompt_logprobs = {}) {
  const Clock::time_point end = Clock::now();
  StepResult result;
  result.prompt_logprobs = std::move(prompt_logprobs);
  result.run_seconds = std::chrono::duration<double>(end - start).count();
  result.launch_seconds = launch_seconds;
  if (st.last_step_end)
    result.gap_seconds = std::chrono::duration<double>(start - *st.last_step_end).count();
  st.last_step_end = end;
  result.step = work.step;
  result.tokens.reserve(sampled.size());
  for (std::size_t r = 0; r < sampled.size(); ++r) {
    SampledToken& t = sampled[r];
    seqs[r]->output.push_back(t.token);
    result.tokens.push_back(t.token);
    if (t.logprobs) {
      result.logprobs.resize(r);  // the rows before the first asking get empty ones
      result.logprobs.push_back(std::move(*t.logprobs));
    } else if (!result.logprobs.empty()) {
      result.logprobs.emplace_back();
    }
  }
  result.spent_batch = std::move(work.batch);
  clear_arrays(result.spent_batch);
  st.spare_seqs = std::move(seqs);
  st.answers->result(std::move(result));
}

// Whether `work` can be queued behind the queued step, fed by it: a look-ahead step (one decode
// per row, each row's input the token the queued step samples for it) none of whose rows reads
// the tokens sampled so far (penalties; min_tokens, which counts them).
bool can_feed(const WorkerState& st, const StepWork& work) {
  if (!st.queued || !work.look_ahead || !st.runner->can_queue(work.sample_seq_ids.size()))
    return false;
  const std::uint64_t ahead = st.queued->work.step;
  for (std::uint64_t id : work.sample_seq_ids) {
    const auto it = st.seqs.find(id);
    if (it == st.seqs.end() || it->second.queued_step != ahead) return false;
    const SamplingParams& p = it->second.params;
    if (p.has_penalties() || static_cast<int>(it->second.output.size()) < p.min_tokens)
      return false;
  }
  return true;
}

StepFailed step_failed(std::uint64_t step, const std::exception& e) {
  return {step, std::string("worker: ") + e.what(), dynamic_cast<const DeviceLost*>(&e) != nullptr};
}

// Collects the queued step's tokens (waiting for them) and answers it.
void answer_queued(WorkerState& st) {
  QueuedStep q = std::move(*st.queued);
  st.queued.reset();
  try {
    std::vector<SampledToken> sampled = st.runner->collect_step();
    // It ran on the device from when it was queued or the step ahead of it ended.
    const Clock::time_point start =
        st.last_step_end ? std::max(q.queued_at, *st.last_step_end) : q.queued_at;
    answer(st, q.work, q.seqs, sampled, start, q.launch_seconds);
  } catch (const std::exception& e) {
    st.answers->failed(step_failed(q.work.step, e));
  }
}

// A continued step's batch and sample ids, from the step it continues.
void fill_continued(WorkerState& st, StepWork& work) {
  if (work.continues_step == 0) return;
  if (work.continues_step != st.last_step)
    throw Error("step " + std::to_string(work.step) + " continues step " +
                std::to_string(work.continues_step) + ", but the last decode step was " +
                std::to_string(st.last_step));
  continue_batch(st.last_batch, work.continuation, work.batch);
  work.sample_seq_ids.clear();
  for_each_kept_row(static_cast<std::int32_t>(st.last_seq_ids.size()), work.continuation,
                    [&](std::int32_t r, std::int32_t) {
                      work.sample_seq_ids.push_back(st.last_seq_ids[r]);
                    });
}

// Keeps a one-token decode step's batch and sample ids for the step after it, once the runner
// has read them (no copy: the batch kept before goes back in its place).
void keep_for_continuation(WorkerState& st, StepWork& work) {
  const Batch& b = work.batch;
  if (b.num_seqs() != b.num_tokens() || b.logits_rows.size() != b.token_ids.size()) return;
  std::swap(st.last_batch, work.batch);
  std::swap(st.last_seq_ids, work.sample_seq_ids);
  st.last_step = work.step;
}

// A step where some sequence wants prompt logprobs: every logits row comes to the host, the
// prompt rows give the logprobs of the prompt tokens they predict, and the sampled rows are
// sampled there (the CPU sampler, as the engine core's step does).
void run_with_prompt_logprobs(WorkerState& st, StepWork& work, std::vector<SampledSeq*>& seqs) {
  const Clock::time_point start = Clock::now();
  const std::span<const float> logits = st.runner->execute(work.batch);
  const auto vocab = static_cast<std::size_t>(st.runner->vocab_size());
  std::vector<PromptLogprob> prompt;
  std::size_t row = 0, next = 0;
  for (const LogitsRows& g : work.logits_layout) {
    if (g.prompt_logprobs >= 0) {
      const std::vector<std::int32_t>& ids = st.seqs.at(g.seq_id).prompt;
      for (std::int32_t r = 0; r < g.count; ++r) {
        const std::int32_t position = g.start + r + 1;  // the prompt token row r predicts
        if (position >= static_cast<std::int32_t>(ids.size())) break;
        prompt.push_back({g.seq_id, position,
                          position_logprobs(logits.subspan((row + r) * vocab, vocab),
                                            ids[position], g.prompt_logprobs)});
      }
    }
    row += static_cast<std::size_t>(g.count);
    // Each sequence is in the plan once: the next sampled one, if it is this, samples its last row.
    if (next < work.sample_seq_ids.size() && work.sample_seq_ids[next] == g.seq_id)
      st.rows[next++].logits = logits.subspan((row - 1) * vocab, vocab);
  }
  if (next != st.rows.size() || row * vocab != logits.size())
    throw Error("step " + std::to_string(work.step) + ": its logits layout does not match its " +
                "batch (" + std::to_string(row) + " rows, " + std::to_string(next) + " sampled)");
  std::vector<SampledToken> sampled = sample_batch(st.rows);
  answer(st, work, seqs, sampled, start, 0, std::move(prompt));
}

// Runs one step: queued on the device when the runner can (answered by the next step or once
// done: poll_queued), else there and then.
void run_step(WorkerState& st, StepWork& work) {
  fill_continued(st, work);
  const bool fed = can_feed(st, work);
  // A step not fed by the queued one needs its tokens first (they are its rows' inputs).
  if (st.queued && !fed) answer_queued(st);
  // A released sequence may still be a row of the queued step: erased once that is answered.
  auto release = [&] {
    for (std::uint64_t id : work.released_seq_ids) st.seqs.erase(id);
  };
  if (!fed) release();
  for (WorkerSeq& s : work.new_seqs)
    st.seqs.insert_or_assign(s.seq_id, SampledSeq{std::move(s.params), std::move(s.prompt), {},
                                                  std::mt19937_64(s.seed)});
  std::vector<SampledSeq*> seqs = std::move(st.spare_seqs);
  gather_rows(st, work, seqs);
  if (work.look_ahead)  // one token per row, row order
    for (std::size_t r = 0; r < seqs.size(); ++r)
      work.batch.token_ids[r] = fed ? -1 - seqs[r]->queued_row : seqs[r]->output.back();
  if (!work.logits_layout.empty()) {
    run_with_prompt_logprobs(st, work, seqs);
    return;
  }
  if (!st.runner->can_queue(seqs.size()) || seqs.size() != work.batch.logits_rows.size()) {
    const Clock::time_point start = Clock::now();
    std::vector<SampledToken> sampled = st.runner->execute_and_sample(work.batch, st.rows);
    keep_for_continuation(st, work);
    answer(st, work, seqs, sampled, start);
    return;
  }
  // Queueing a step's kernels may itself take a while (an eager prefill's): it counts in.
  const Clock::time_point queued_at = Clock::now();
  st.runner->queue_step(work.batch, st.rows, fed);
  const double launch_seconds = std::chrono::duration<double>(Clock::now() - queued_at).count();
  keep_for_continuation(st, work);
  for (std::size_t r = 0; r < seqs.size(); ++r) {
    seqs[r]->queued_step = work.step;
    seqs[r]->queued_row = static_cast<std::int32_t>(r);
  }
  QueuedStep next{std::move(work), std::move(seqs), queued_at, launch_seconds};
  if (fed) {
    answer_queued(st);
    release();
  }
  st.queued = std::move(next);
}

// The thread's idle work: answers the queued step once its tokens are back.
bool poll_queued(WorkerState& st) {
  if (!st.queued) return false;
  bool done = true;
  try {
    done = st.runner->step_ready();
  } catch (const std::exception&) {  // answer_queued's collect reports it
  }
  if (!done) return true;
  answer_queued(st);
  return false;
}

}  // namespace

StepExecutor::StepExecutor(ModelRunner& runner, std::vector<std::int32_t> eos_ids)
    : st_(std::make_unique<State>()) {
  st_->runner = &runner;
  st_->eos_ids = std::move(eos_ids);
}

StepExecutor::~StepExecutor() = default;

ModelRunner& StepExecutor::runner() { return *st_->runner; }

void StepExecutor::run(StepWork& work, StepAnswers& answers) {
  State& st = *st_;
  st.answers = &answers;
  const std::uint64_t step = work.step;
  try {
    run_step(st, work);
  } catch (const std::exception& e) {
    // Answers go in step order: a step queued before this one goes first.
    if (st.queued) answer_queued(st);
    answers.failed(step_failed(step, e));
  }
}

bool StepExecutor::poll(StepAnswers& answers) {
  st_->answers = &answers;
  return poll_queued(*st_);
}

void StepExecutor::drain(StepAnswers& answers) {
  st_->answers = &answers;
  if (st_->queued) answer_queued(*st_);
}

}  // namespace minivllm
