#include "server/engine_client.hpp"

#include <caf/all.hpp>

namespace minivllm::server {
namespace {

EngineFailure failure_of(caf::actor_system& sys, const caf::error& err) {
  return {is_request_refused(err), error_text(sys, err)};
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
                                      std::shared_ptr<RequestCallbacks> callbacks) {
  self->state.callbacks = std::move(*callbacks);
  self->request(engine, caf::infinite, std::move(request), caf::actor_cast<delta_sink>(self))
      .then(
          [self](RequestOutput& out) {
            self->state.output = std::move(out);
            deliver_if_complete(self);
          },
          [self](caf::error& err) {
            self->state.callbacks.failed(failure_of(self->system(), err));
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

void EngineClient::submit(GenerateRequest request, RequestCallbacks callbacks) {
  // Spawn arguments, not captures: CAF 0.17 spawns a function without arguments differently.
  sys_->spawn(run_request, engine_, std::move(request),
                   std::make_shared<RequestCallbacks>(std::move(callbacks)));
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
         std::function<void(EngineStats&)> done, std::function<void(const EngineFailure&)> failed) {
        self->request(engine, caf::infinite, stats_atom_v)
            .then([done](EngineStats& s) { done(s); },
                  [self, failed](caf::error& err) { failed(failure_of(self->system(), err)); });
      },
      engine_, std::move(done), std::move(failed));
}

void EngineClient::tokenize(GenerateRequest request,
                            std::function<void(std::vector<std::int32_t>&)> done,
                            std::function<void(const EngineFailure&)> failed) {
  sys_->spawn(
      [](caf::event_based_actor* self, engine_actor engine, GenerateRequest request,
         std::function<void(std::vector<std::int32_t>&)> done,
         std::function<void(const EngineFailure&)> failed) {
        self->request(engine, caf::infinite, tokenize_atom_v, std::move(request))
            .then([done](std::vector<std::int32_t>& ids) { done(ids); },
                  [self, failed](caf::error& err) { failed(failure_of(self->system(), err)); });
      },
      engine_, std::move(request), std::move(done), std::move(failed));
}

void EngineClient::shutdown() { caf::anon_send(engine_, shutdown_atom_v); }

}  // namespace minivllm::server
