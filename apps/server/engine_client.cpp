#include "server/engine_client.hpp"

#include <mutex>

#include <caf/all.hpp>

namespace minivllm::server {

// Why the device was lost, once an answer said so.
struct LostDevice {
  std::mutex mutex;
  std::string reason;
};

namespace {

// The failure handed to a callback; a lost device is noted first.
EngineFailure failure_of(caf::actor_system& sys, LostDevice& lost, const caf::error& err) {
  EngineFailure f{is_request_refused(err), is_device_lost(err), is_worker_lost(err),
                  error_text(sys, err)};
  if (f.device_lost) {
    std::lock_guard lock(lost.mutex);
    if (lost.reason.empty()) lost.reason = f.message;
  }
  return f;
}

// One request: its sink and its requester. The final output may overtake the request's last
// deltas (they travel as separate messages), so it is held until every completion's finished
// delta is in.
struct RequestState {
  RequestCallbacks callbacks;
  std::size_t finished_deltas = 0;
  std::optional<RequestOutput> output;
};

using request_actor = delta_sink::stateful_pointer<RequestState>;

void deliver_if_complete(request_actor self) {
  RequestState& st = self->state;
  if (!st.output || st.finished_deltas < st.output->outputs.size()) return;
  st.callbacks.done(*st.output);
  self->quit();
}

delta_sink::behavior_type run_request(request_actor self, engine_actor engine,
                                      GenerateRequest request,
                                      std::shared_ptr<RequestCallbacks> callbacks,
                                      std::shared_ptr<LostDevice> lost) {
  self->state.callbacks = std::move(*callbacks);
  self->request(engine, caf::infinite, std::move(request), caf::actor_cast<delta_sink>(self))
      .then(
          [self](RequestOutput& out) {
            self->state.output = std::move(out);
            deliver_if_complete(self);
          },
          [self, lost](caf::error& err) {
            self->state.callbacks.failed(failure_of(self->system(), *lost, err));
            self->quit();
          });
  return {[self](RequestDelta& d) {
    RequestState& st = self->state;
    const bool finished = d.finished;
    st.callbacks.delta(d);
    if (finished) {
      ++st.finished_deltas;
      deliver_if_complete(self);
    }
  }};
}

}  // namespace

EngineClient::EngineClient(caf::actor_system& sys, engine_actor engine)
    : sys_(&sys), engine_(std::move(engine)), lost_(std::make_shared<LostDevice>()) {}

std::string EngineClient::device_lost() const {
  std::lock_guard lock(lost_->mutex);
  return lost_->reason;
}

void EngineClient::submit(GenerateRequest request, RequestCallbacks callbacks) {
  // Spawn arguments, not captures: CAF 0.17 spawns a function without arguments differently.
  sys_->spawn(run_request, engine_, std::move(request),
              std::make_shared<RequestCallbacks>(std::move(callbacks)), lost_);
}

void EngineClient::abort(const std::string& request_id) {
  sys_->spawn(
      [](caf::event_based_actor* self, engine_actor engine, std::string id) {
        self->request(engine, caf::infinite, abort_atom_v, std::move(id))
            .then([](bool) {}, [](caf::error&) {});
      },
      engine_, request_id);
}

void EngineClient::stats(std::function<void(EngineStats&)> done,
                         std::function<void(const EngineFailure&)> failed) {
  sys_->spawn(
      [](caf::event_based_actor* self, engine_actor engine,
         std::function<void(EngineStats&)> done, std::function<void(const EngineFailure&)> failed,
         std::shared_ptr<LostDevice> lost) {
        self->request(engine, caf::infinite, stats_atom_v)
            .then([done](EngineStats& s) { done(s); },
                  [self, failed, lost](caf::error& err) {
                    failed(failure_of(self->system(), *lost, err));
                  });
      },
      engine_, std::move(done), std::move(failed), lost_);
}

void EngineClient::tokenize(GenerateRequest request,
                            std::function<void(std::vector<std::int32_t>&)> done,
                            std::function<void(const EngineFailure&)> failed) {
  sys_->spawn(
      [](caf::event_based_actor* self, engine_actor engine, GenerateRequest request,
         std::function<void(std::vector<std::int32_t>&)> done,
         std::function<void(const EngineFailure&)> failed, std::shared_ptr<LostDevice> lost) {
        self->request(engine, caf::infinite, tokenize_atom_v, std::move(request))
            .then([done](std::vector<std::int32_t>& ids) { done(ids); },
                  [self, failed, lost](caf::error& err) {
                    failed(failure_of(self->system(), *lost, err));
                  });
      },
      engine_, std::move(request), std::move(done), std::move(failed), lost_);
}

void EngineClient::shutdown() { caf::anon_send(engine_, shutdown_atom_v); }

}  // namespace minivllm::server
