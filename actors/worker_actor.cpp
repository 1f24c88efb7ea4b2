#include "actors/worker_actor.hpp"

#include <deque>
#include <future>
#include <string>

#include <caf/all.hpp>

#include "actors/job_thread.hpp"
#include "actors/runtime_error.hpp"
#include "engine/step_executor.hpp"

namespace minivllm {
namespace {

// Counts the worker's thread as one of the actor system's running actors while it lives, so the
// system's shutdown waits for the runner to be destroyed (on that thread, which may outlive the
// worker actor by a moment: see ~JobThread).
struct EndRunning {
  void operator()(caf::actor_registry* registry) const { registry->dec_running(); }
};
using RunningGuard = std::unique_ptr<caf::actor_registry, EndRunning>;

// The worker's full interface: the scheduler's plus its runner thread's answers.
using worker_impl_actor =
    worker_actor::extend<caf::reacts_to<StepResult>, caf::reacts_to<StepFailed>>;

// The runner thread -> the worker actor: what a step gave. A weak address: the thread belongs to
// the actor, and a strong one would keep it alive.
struct ReplyToWorker final : StepAnswers {
  caf::actor_addr to;

  template <class T>
  void reply(T&& message) {
    if (auto worker = caf::actor_cast<worker_impl_actor>(to))
      caf::anon_send(worker, std::forward<T>(message));
  }
  void result(StepResult&& result) override { reply(std::move(result)); }
  void failed(StepFailed&& failure) override { reply(std::move(failure)); }
};

// The runner thread's state: the executor (with the runner: model, KV cache, backend).
struct WorkerState {
  RunningGuard running;  // first: released last
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<StepExecutor> executor;  // on `runner`
  std::string load_error;  // why there is no executor
  std::int64_t num_blocks = 0;
  ReplyToWorker answers;
};

// The worker actor's state: the runner thread and the steps it was given, oldest first.
struct WorkerFront {
  bool loaded = false;  // the runner was built
  WorkerReady ready;
  std::string load_error;  // why not
  std::string device_lost;  // not empty: a step lost the device; every later step fails so
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
                          std::function<LoadedRunner()> make_runner,
                          std::vector<std::int32_t> eos_ids) {
  // The runner (a device's context and stream, later its NCCL communicator) is built, used and
  // destroyed on the worker's own thread only.
  auto thread = std::make_unique<JobThread<WorkerState>>(
      [registry = &sys.registry(), make = std::move(make_runner), eos = std::move(eos_ids)] {
        WorkerState st;
        registry->inc_running();
        st.running.reset(registry);
        try {
          LoadedRunner loaded = make();
          st.runner = std::move(loaded.runner);
          st.num_blocks = loaded.num_blocks;
          st.executor = std::make_unique<StepExecutor>(*st.runner, eos);
        } catch (const std::exception& e) {
          st.load_error = e.what();
        }
        return st;
      },
      [](WorkerState& st) { return st.executor && st.executor->poll(st.answers); });
  auto built = std::make_shared<std::promise<WorkerFront>>();
  std::future<WorkerFront> front_ready = built->get_future();
  thread->post([built](WorkerState& st) {
    WorkerFront front;
    front.loaded = st.executor != nullptr;
    if (front.loaded) front.ready = {st.runner->vocab_size(), st.num_blocks};
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
            [self](ready_atom) -> caf::result<WorkerReady> {
              if (!self->state.loaded) return runtime_error(self->state.load_error);
              return self->state.ready;
            },
            [self](StepWork& work) -> caf::result<StepResult> {
              if (!self->state.loaded) return runtime_error(self->state.load_error);
              if (!self->state.device_lost.empty())
                return device_lost_error(self->state.device_lost);
              self->state.steps.push_back(self->make_response_promise<StepResult>());
              self->state.thread->post([to = self->address(), work = std::move(work)](
                                           WorkerState& st) mutable {
                st.answers.to = to;
                st.executor->run(work, st.answers);
              });
              return self->state.steps.back();
            },
            [self](StepResult& result) { self->state.answer_oldest(std::move(result)); },
            [self](StepFailed& failed) {
              auto& st = self->state;
              if (failed.device_lost && st.device_lost.empty()) st.device_lost = failed.error;
              // Once lost, the steps queued behind the one that lost it fail for the same reason.
              st.answer_oldest(st.device_lost.empty() ? runtime_error(failed.error)
                                                      : device_lost_error(st.device_lost));
            },
        };
      },
      std::move(front));
  return caf::actor_cast<worker_actor>(worker);
}

}  // namespace minivllm
