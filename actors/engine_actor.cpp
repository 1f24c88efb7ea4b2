#include "actors/engine_actor.hpp"
#include "actors/runtime_spec.hpp"

#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "actors/runtime_error.hpp"
#include "actors/scheduler_actor.hpp"
#include "engine/request_table.hpp"
#include "engine/tokenizer_text.hpp"
#include "log/log.hpp"

namespace minivllm {
namespace {

// Who waits for a request: its promise, its sink (may be null) and the actor that sent it.
struct Client {
  caf::typed_response_promise<RequestOutput> promise;
  delta_sink sink;
  caf::actor_addr requester;
};

// The request table's events, to the clients.
struct ToClients final : RequestEvents {
  std::unordered_map<std::string, Client>* clients = nullptr;
  bool device_lost = false;  // the failures are the lost device's: told as such

  void delta(RequestDelta&& delta) override {
    const auto it = clients->find(delta.request_id);
    if (it != clients->end() && it->second.sink)
      caf::anon_send(it->second.sink, std::move(delta));
  }
  void answered(RequestOutput&& output) override {
    auto client = clients->extract(output.request_id);
    if (!client.empty()) client.mapped().promise.deliver(std::move(output));
  }
  void failed(const std::string& request_id, const std::string& error, bool refused) override {
    auto client = clients->extract(request_id);
    if (client.empty()) return;
    client.mapped().promise.deliver(failure(request_id, error, refused));
  }
  caf::error failure(const std::string& request_id, const std::string& error, bool refused) const {
    if (refused) return request_refused(error);
    std::string text = "request " + request_id + ": " + error;
    return device_lost ? device_lost_error(std::move(text)) : runtime_error(std::move(text));
  }
};

// Message plumbing around the request table: requests in, outputs to their clients.
struct EngineState {
  std::unique_ptr<RequestTable> table;
  scheduler_actor scheduler;
  std::unordered_map<std::string, Client> clients;
  std::unordered_set<caf::actor_addr> monitored;
  ToClients events;
};

using pointer = engine_impl_actor::stateful_pointer<EngineState>;

caf::result<RequestOutput> submit(pointer self, GenerateRequest& req, delta_sink& sink) {
  auto& st = self->state;
  SeqRequest seqs;
  try {
    // A final-only request's sink gets no deltas: its answer is all there is.
    seqs = st.table->open(req, sink && req.params.output_kind != OutputKind::final_only);
  } catch (const std::exception& e) {
    log_line(LogLevel::warn, std::string("refused: ") + e.what());
    return request_refused(e.what());
  }
  Client client;
  // Before the promise: making it takes the sender out of the current message.
  if (const caf::strong_actor_ptr& sender = self->current_sender()) {
    client.requester = caf::actor_cast<caf::actor_addr>(sender);
    if (st.monitored.insert(client.requester).second) self->monitor(sender);
  }
  client.promise = self->make_response_promise<RequestOutput>();
  client.sink = std::move(sink);
  auto promise = client.promise;
  const std::string id = seqs.request_id;
  st.clients.emplace(id, std::move(client));
  self->request(st.scheduler, caf::infinite, std::move(seqs))
      .then([](bool) {},
            [self, id](caf::error& err) {
              auto& st = self->state;
              st.table->refuse(id, error_text(self->system(), err), st.events);
            });
  return promise;
}

}  // namespace

engine_actor spawn_engine(caf::actor_system& sys, const RuntimeSpec& spec, std::int32_t vocab_size,
                          worker_actor worker) {
  engine_impl_actor engine = sys.spawn(
      [](pointer self, std::shared_ptr<const Tokenizer> tokenizer, ChatRenderer chat,
         SamplingDefaults defaults, std::int32_t vocab, worker_actor worker,
         EngineConfig config,
         std::chrono::milliseconds step_timeout) -> engine_impl_actor::behavior_type {
        auto& st = self->state;
        const TextStreams text = tokenizer_text_streams(tokenizer);
        st.table = std::make_unique<RequestTable>(std::move(tokenizer), std::move(chat), text,
                                                  vocab, defaults);
        st.events.clients = &st.clients;
        st.scheduler = spawn_scheduler(self->system(), config, step_timeout, text,
                                       caf::actor_cast<step_output_sink>(self), worker);
        self->link_to(st.scheduler);
        self->link_to(worker);
        self->set_down_handler([self](caf::down_msg& down) {
          auto& st = self->state;
          st.monitored.erase(down.source);
          for (const auto& [id, client] : st.clients)
            if (client.requester == down.source)
              self->request(st.scheduler, caf::infinite, abort_atom_v, id).then([](bool) {});
        });
        return {
            [self](GenerateRequest& req, delta_sink& sink) { return submit(self, req, sink); },
            [self](tokenize_atom, GenerateRequest& req) -> caf::result<std::vector<std::int32_t>> {
              try {
                return self->state.table->prompt_of(req);
              } catch (const std::exception& e) {
                return request_refused(e.what());
              }
            },
            [self](abort_atom, std::string& id) {
              return self->delegate(self->state.scheduler, abort_atom_v, std::move(id));
            },
            [self](stats_atom) -> caf::result<EngineStats> {
              // The scheduler's snapshot, with the request counters the table keeps.
              auto promise = self->make_response_promise<EngineStats>();
              self->request(self->state.scheduler, caf::infinite, stats_atom_v)
                  .then(
                      [self, promise](EngineStats& stats) mutable {
                        const EngineCounters& blocks = stats.counters;
                        EngineCounters counters = self->state.table->counters();
                        counters.prefix_cache_queries = blocks.prefix_cache_queries;
                        counters.prefix_cache_hits = blocks.prefix_cache_hits;
                        stats.counters = std::move(counters);
                        promise.deliver(std::move(stats));
                      },
                      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
              return promise;
            },
            [self](shutdown_atom) {
              auto& st = self->state;
              st.table->abort_all(st.events);
              // Links take the scheduler and the worker down with the engine.
              self->quit(caf::exit_reason::user_shutdown);
            },
            [self](StepOutputs& out) {
              auto& st = self->state;
              st.events.device_lost = !out.device_lost.empty();
              st.table->apply(out, st.events);
              if (out.device_lost.empty()) return;
              // The requests still on their way to the scheduler end with it too; then the
              // runtime stops, its exit reason telling linked and monitoring actors why.
              log_line(LogLevel::error, "the runtime stops: " + out.device_lost);
              for (auto& [id, client] : st.clients)
                client.promise.deliver(st.events.failure(id, out.device_lost, false));
              st.clients.clear();
              self->quit(device_lost_error(out.device_lost));
            },
        };
      },
      spec.tokenizer, spec.chat, spec.sampling_defaults, vocab_size, std::move(worker),
      spec.engine, spec.step_timeout);
  return engine;
}

}  // namespace minivllm
