#include "actors/worker_actor.hpp"

#include <chrono>
#include <deque>
#include <future>
#include <optional>
#include <random>
#include <unordered_map>

#include <caf/all.hpp>

#include "actors/job_thread.hpp"
#include "actors/runtime_error.hpp"
#include "engine/cpu_sampler.hpp"

namespace minivllm {
namespace {

// What the worker remembers of a sequence to sample it: the worker appends the tokens it
// samples, so only new sequences travel, once.
struct SampledSeq {
  SamplingParams params;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> output;
  std::mt19937_64 rng;
};

// Counts the worker's thread as one of the actor system's running actors while it lives, so the
// system's shutdown waits for the runner to be destroyed (on that thread, which may outlive the
// worker actor by a moment: see ~JobThread).
struct EndRunning {
  void operator()(caf::actor_registry* registry) const { registry->dec_running(); }
};
using RunningGuard = std::unique_ptr<caf::actor_registry, EndRunning>;

struct WorkerState {
  RunningGuard running;  // first: released last
  std::unique_ptr<ModelRunner> runner;
  std::string load_error;  // why there is no runner
  std::vector<std::int32_t> eos_ids;
  std::unordered_map<std::uint64_t, SampledSeq> seqs;
  std::optional<std::chrono::steady_clock::time_point> last_step_end;
  // A step's rows, in row order: kept so that no step allocates them anew.
  std::vector<SampledSeq*> row_seqs;
  std::vector<SamplerRow> rows;
};

StepResult run_step(WorkerState& st, StepWork& work) {
  for (std::uint64_t id : work.released_seq_ids) st.seqs.erase(id);
  for (WorkerSeq& s : work.new_seqs)
    st.seqs.insert_or_assign(s.seq_id, SampledSeq{std::move(s.params), std::move(s.prompt), {},
                                                  std::mt19937_64(s.seed)});
  std::vector<SampledSeq*>& seqs = st.row_seqs;  // one lookup per row and step
  std::vector<SamplerRow>& rows = st.rows;
  seqs.clear();
  rows.clear();
  for (std::uint64_t id : work.sample_seq_ids) {
    SampledSeq& s = *seqs.emplace_back(&st.seqs.at(id));
    rows.push_back({{}, &s.params, s.prompt, s.output, st.eos_ids, &s.rng});
  }
  if (work.look_ahead)  // one token per row, row order
    for (std::size_t r = 0; r < seqs.size(); ++r) work.batch.token_ids[r] = seqs[r]->output.back();
  using clock = std::chrono::steady_clock;
  const clock::time_point start = clock::now();
  std::vector<SampledToken> sampled = st.runner->execute_and_sample(work.batch, rows);
  const clock::time_point end = clock::now();
  StepResult result;
  result.run_seconds = std::chrono::duration<double>(end - start).count();
  if (st.last_step_end)
    result.gap_seconds = std::chrono::duration<double>(start - *st.last_step_end).count();
  st.last_step_end = end;
  result.step = work.step;
  result.tokens.reserve(work.sample_seq_ids.size());
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
  return result;
}

// Clears every array of `batch`, keeping their capacity.
void clear_arrays(Batch& batch) {
  for (auto* v : {&batch.token_ids, &batch.positions, &batch.query_start, &batch.context_lens,
                  &batch.block_tables, &batch.logits_rows})
    v->clear();
  batch.slot_mapping.clear();
  batch.max_blocks_per_seq = 0;
}

// The worker's full interface: the scheduler's plus its runner thread's answers.
using worker_impl_actor =
    worker_actor::extend<caf::reacts_to<StepResult>, caf::reacts_to<StepFailed>>;

// The runner thread -> the worker actor: what a step gave. A weak address: the thread belongs to
// the actor, and a strong one would keep it alive.
template <class T>
void reply(const caf::actor_addr& to, T&& message) {
  if (auto worker = caf::actor_cast<worker_impl_actor>(to))
    caf::anon_send(worker, std::forward<T>(message));
}

// The worker actor's state: the runner thread and the steps it was given, oldest first.
struct WorkerFront {
  bool loaded = false;  // the runner was built
  std::int32_t vocab_size = 0;
  std::string load_error;  // why not
  std::deque<caf::typed_response_promise<StepResult>> steps;
  std::unique_ptr<JobThread<WorkerState>> thread;

  template <class T>
  void answer_oldest(T&& answer) {
    steps.front().deliver(std::forward<T>(answer));
    steps.pop_front();
  }
};

}  // namespace

worker_actor spawn_worker(caf::actor_system& sys,
                          std::function<std::unique_ptr<ModelRunner>()> make_runner,
                          std::vector<std::int32_t> eos_ids) {
  // The runner (a device's context and stream, later its NCCL communicator) is built, used and
  // destroyed on the worker's own thread only.
  auto thread = std::make_unique<JobThread<WorkerState>>(
      [registry = &sys.registry(), make = std::move(make_runner), eos = std::move(eos_ids)] {
        WorkerState st;
        registry->inc_running();
        st.running.reset(registry);
        st.eos_ids = eos;
        try {
          st.runner = make();
        } catch (const std::exception& e) {
          st.load_error = e.what();
        }
        return st;
      });
  auto built = std::make_shared<std::promise<WorkerFront>>();
  std::future<WorkerFront> front_ready = built->get_future();
  thread->post([built](WorkerState& st) {
    WorkerFront front;
    front.loaded = st.runner != nullptr;
    if (front.loaded) front.vocab_size = st.runner->vocab_size();
    else front.load_error = st.load_error;
    built->set_value(std::move(front));
  });
  WorkerFront front = front_ready.get();
  front.thread = std::move(thread);
  // Pooled: a step reaches it on the scheduler's own CAF thread (no wake-up), and it hands the
  // step to the runner thread through a condition variable, far cheaper on these machines than
  // a detached actor's mailbox (benchmarks/actor_handoff_bench.cpp).
  worker_impl_actor worker = sys.spawn(
      [](worker_impl_actor::stateful_pointer<WorkerFront> self,
         WorkerFront front) -> worker_impl_actor::behavior_type {
        self->state = std::move(front);
        return {
            [self](ready_atom) -> caf::result<std::int32_t> {
              if (!self->state.loaded) return runtime_error(self->state.load_error);
              return self->state.vocab_size;
            },
            [self](StepWork& work) -> caf::result<StepResult> {
              if (!self->state.loaded) return runtime_error(self->state.load_error);
              self->state.steps.push_back(self->make_response_promise<StepResult>());
              self->state.thread->post([to = self->address(), work = std::move(work)](
                                           WorkerState& st) mutable {
                StepFailed failed{work.step, {}};
                try {
                  StepResult result = run_step(st, work);
                  result.spent_batch = std::move(work.batch);
                  clear_arrays(result.spent_batch);
                  reply(to, std::move(result));
                  return;
                } catch (const std::exception& e) {
                  failed.error = std::string("worker: ") + e.what();
                }
                reply(to, std::move(failed));
              });
              return self->state.steps.back();
            },
            [self](StepResult& result) { self->state.answer_oldest(std::move(result)); },
            [self](StepFailed& failed) { self->state.answer_oldest(runtime_error(failed.error)); },
        };
      },
      std::move(front));
  return caf::actor_cast<worker_actor>(worker);
}

}  // namespace minivllm
