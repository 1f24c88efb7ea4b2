#include "actors/scheduler_actor.hpp"

#include <chrono>
#include <string>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>

#include "actors/remote_messages.hpp"
#include "actors/runtime_error.hpp"
#include "engine/engine_core.hpp"

namespace minivllm {
namespace {

// Message plumbing around the engine core: requests and aborts in, steps to the worker and
// their results back, outputs to the engine.
struct SchedulerState {
  std::unique_ptr<EngineCore> core;
  step_output_sink engine;
  worker_actor worker;
  std::chrono::milliseconds step_timeout;
  std::string device_lost;  // not empty: the worker lost its device; nothing runs any more
  std::string worker_lost;  // not empty: a worker of the group is lost; nothing runs until one
                            // joins in its place
};

using pointer = scheduler_actor::stateful_pointer<SchedulerState>;

void send_outputs(pointer self, StepOutputs& out) {
  if (!out.admitted.empty() || !out.prompt_logprobs.empty() || !out.tokens.empty() ||
      !out.updates.empty())
    self->send(self->state.engine, std::move(out));
}

void advance(pointer self);

// A worker of the group is lost: every request ends with `error`, and none is taken until the
// group is whole again. The new worker's KV cache holds none of the cached prefixes: the
// scheduler forgets them then.
void lose_worker(pointer self, const std::string& error) {
  auto& st = self->state;
  st.worker_lost = error;
  StepOutputs out;
  st.core->fail_all(error, out);
  out.worker_lost = error;  // the engine routes new requests to other replicas meanwhile
  self->send(st.engine, std::move(out));
  self->request(caf::actor_cast<worker_group_actor>(st.worker), caf::infinite, restore_atom_v)
      .then([self](bool) {
        auto& st = self->state;
        st.core->forget_cached_prefixes();
        st.worker_lost.clear();
        StepOutputs restored;
        restored.worker_restored = true;
        self->send(st.engine, std::move(restored));
        advance(self);
      },
      [](caf::error&) {});  // the group is gone: so is the runtime
}

// Keeps the worker fed: every step the core has for it now.
void advance(pointer self) {
  auto& st = self->state;
  StepOutputs failed;
  while (std::optional<StepWork> work = st.core->next_step(failed)) {
    const std::uint64_t step = work->step;
    // Bounded: a worker that stops answering (a wedged device, a deadlocked collective) fails
    // the step's requests instead of hanging them. Its late answer, if any, is dropped.
    self->request(st.worker, st.step_timeout, std::move(*work))
        .then(
            [self](StepResult& result) {
              auto& st = self->state;
              if (!st.device_lost.empty() || !st.worker_lost.empty()) return;
              StepOutputs out;
              st.core->complete(result, out);
              send_outputs(self, out);
              advance(self);
              st.core->end_turn();
            },
            [self, step](caf::error& err) {
              auto& st = self->state;
              // Ended with the step that lost it.
              if (!st.device_lost.empty() || !st.worker_lost.empty()) return;
              if (is_worker_lost(err)) return lose_worker(self, error_text(self->system(), err));
              StepOutputs out;
              if (is_device_lost(err)) {
                st.device_lost = error_text(self->system(), err);
                st.core->fail_all(st.device_lost, out);
                out.device_lost = st.device_lost;
                self->send(st.engine, std::move(out));
                return;
              }
              st.core->fail_step(
                  err == caf::sec::request_timeout
                      ? "the worker did not answer step " + std::to_string(step) + " within " +
                            std::to_string(st.step_timeout.count()) +
                            " ms (runtime.step_timeout_s)"
                      : error_text(self->system(), err),
                  out);
              send_outputs(self, out);
              advance(self);  // the requests the step did not run go on
            });
  }
  send_outputs(self, failed);
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, const EngineConfig& config,
                                std::chrono::milliseconds step_timeout, TextStreams text,
                                step_output_sink engine, worker_actor worker) {
  return sys.spawn(
      [](pointer self, EngineConfig config, std::chrono::milliseconds step_timeout,
         TextStreams text, step_output_sink engine,
         worker_actor worker) -> scheduler_actor::behavior_type {
        auto& st = self->state;
        st.core = std::make_unique<EngineCore>(config, std::move(text));
        st.engine = std::move(engine);
        st.worker = std::move(worker);
        st.step_timeout = step_timeout;
        return {
            [self](SeqRequest& req) -> caf::result<bool> {
              if (!self->state.device_lost.empty())
                return device_lost_error(self->state.device_lost);
              if (!self->state.worker_lost.empty())
                return worker_lost_error("the engine cannot take requests now: " +
                                         self->state.worker_lost +
                                         "; it waits for a worker to join in its place");
              try {
                self->state.core->add(req);
              } catch (const std::exception& e) {
                return runtime_error(e.what());
              }
              advance(self);
              return true;
            },
            [self](lost_atom, const std::string& why) {
              auto& st = self->state;
              if (!from_this_node(self) || !st.device_lost.empty() || !st.worker_lost.empty())
                return;
              lose_worker(self, why);
            },
            [self](abort_atom, const std::string& request_id) {
              StepOutputs out;
              const bool known = self->state.core->abort(request_id, out);
              send_outputs(self, out);
              return known;
            },
            [self](stats_atom) {
              const EngineCore& core = *self->state.core;
              const Scheduler& scheduler = core.scheduler();
              const BlockManager& blocks = scheduler.block_manager();
              EngineStats stats{core.num_steps(),
                                scheduler.num_running(),
                                scheduler.num_waiting(),
                                scheduler.num_preemptions(),
                                static_cast<std::uint64_t>(blocks.num_free_blocks()),
                                static_cast<std::uint64_t>(blocks.num_blocks()),
                                scheduler.check_invariants(),
                                core.step_times(),
                                {}};
              // The engine actor fills in the request counters it keeps.
              stats.counters.prefix_cache_queries = blocks.prefix_cache_queries();
              stats.counters.prefix_cache_hits = blocks.prefix_cache_hits();
              return stats;
            },
        };
      },
      config, step_timeout, std::move(text), std::move(engine), std::move(worker));
}

}  // namespace minivllm
