#include "actors/engine_actor.hpp"
#include "actors/runtime_spec.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <caf/all.hpp>

#include "actors/runtime_error.hpp"
#include "actors/scheduler_actor.hpp"
#include "engine/replica_router.hpp"
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

// The request table's events, to the clients; an ended request leaves the router's load.
struct ToClients final : RequestEvents {
  std::unordered_map<std::string, Client>* clients = nullptr;
  ReplicaRouter* router = nullptr;
  bool device_lost = false;  // the failures are the lost device's: told as such
  bool worker_lost = false;  // the refusals are a lost worker's: the engine serves again later

  void delta(RequestDelta&& delta) override {
    const auto it = clients->find(delta.request_id);
    if (it != clients->end() && it->second.sink)
      caf::anon_send(it->second.sink, std::move(delta));
  }
  void answered(RequestOutput&& output) override {
    router->ended(output.request_id);
    auto client = clients->extract(output.request_id);
    if (!client.empty()) client.mapped().promise.deliver(std::move(output));
  }
  void failed(const std::string& request_id, const std::string& error, bool refused) override {
    router->ended(request_id);
    auto client = clients->extract(request_id);
    if (client.empty()) return;
    client.mapped().promise.deliver(failure(request_id, error, refused));
  }
  caf::error failure(const std::string& request_id, const std::string& error, bool refused) const {
    if (refused) return worker_lost ? worker_lost_error(error) : request_refused(error);
    std::string text = "request " + request_id + ": " + error;
    return device_lost ? device_lost_error(std::move(text)) : runtime_error(std::move(text));
  }
};

// Message plumbing around the request table: requests in, outputs to their clients.
struct EngineState {
  std::unique_ptr<RequestTable> table;
  std::vector<scheduler_actor> schedulers;  // one per data-parallel replica
  std::unique_ptr<ReplicaRouter> router;
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
  const std::size_t replica = st.router->route(id, seqs.prompt);
  self->request(st.schedulers[replica], caf::infinite, std::move(seqs))
      .then([](bool) {},
            [self, id](caf::error& err) {
              auto& st = self->state;
              st.events.worker_lost = is_worker_lost(err);
              st.table->refuse(id, error_text(self->system(), err), st.events);
              st.events.worker_lost = false;
            });
  return promise;
}

// The scheduler running request `id` (the first replica's when none is: it answers as for an
// unknown request).
const scheduler_actor& scheduler_of(const EngineState& st, const std::string& id) {
  const std::size_t replica = st.router->replica_of(id);
  return st.schedulers[replica < st.schedulers.size() ? replica : 0];
}

// The replicas' snapshots as one: counts and times summed, the request counters the table
// keeps (with the replicas' prefix-cache counts).
caf::result<EngineStats> stats(pointer self) {
  struct Gather {
    EngineStats sum;
    std::size_t pending = 0;
    std::string error;
    caf::typed_response_promise<EngineStats> promise;
  };
  auto gather = std::make_shared<Gather>();
  gather->pending = self->state.schedulers.size();
  gather->promise = self->make_response_promise<EngineStats>();
  auto finish = [self, gather] {
    if (--gather->pending > 0) return;
    if (!gather->error.empty()) {
      gather->promise.deliver(runtime_error(gather->error));
      return;
    }
    EngineStats& s = gather->sum;
    EngineCounters counters = self->state.table->counters();
    counters.prefix_cache_queries = s.counters.prefix_cache_queries;
    counters.prefix_cache_hits = s.counters.prefix_cache_hits;
    s.counters = std::move(counters);
    gather->promise.deliver(std::move(s));
  };
  const std::size_t replicas = self->state.schedulers.size();
  for (std::size_t r = 0; r < replicas; ++r)
    self->request(self->state.schedulers[r], caf::infinite, stats_atom_v)
        .then(
            [gather, finish, r, replicas](EngineStats& one) {
              EngineStats& s = gather->sum;
              s.num_steps += one.num_steps;
              s.num_running += one.num_running;
              s.num_waiting += one.num_waiting;
              s.num_preemptions += one.num_preemptions;
              s.num_free_blocks += one.num_free_blocks;
              s.num_blocks += one.num_blocks;
              if (!one.invariant_violation.empty())
                s.invariant_violation += (replicas > 1 ? "replica " + std::to_string(r) + ": " : "") +
                                         one.invariant_violation;
              s.step_times.add(one.step_times);
              s.counters.prefix_cache_queries += one.counters.prefix_cache_queries;
              s.counters.prefix_cache_hits += one.counters.prefix_cache_hits;
              finish();
            },
            [self, gather, finish](caf::error& err) {
              if (gather->error.empty()) gather->error = error_text(self->system(), err);
              finish();
            });
  return gather->promise;
}

}  // namespace

engine_actor spawn_engine(caf::actor_system& sys, const RuntimeSpec& spec, std::int32_t vocab_size,
                          std::vector<worker_actor> replicas) {
  engine_impl_actor engine = sys.spawn(
      [](pointer self, std::shared_ptr<const Tokenizer> tokenizer, ChatRenderer chat,
         SamplingDefaults defaults, std::int32_t vocab, std::vector<worker_actor> replicas,
         EngineConfig config,
         std::chrono::milliseconds step_timeout) -> engine_impl_actor::behavior_type {
        auto& st = self->state;
        const TextStreams text = tokenizer_text_streams(tokenizer);
        st.table = std::make_unique<RequestTable>(std::move(tokenizer), std::move(chat), text,
                                                  vocab, defaults);
        st.router = std::make_unique<ReplicaRouter>(
            replicas.size(), config.cache.block_size,
            static_cast<std::size_t>(std::max(1, config.cache.num_blocks)));
        st.events.clients = &st.clients;
        st.events.router = st.router.get();
        for (const worker_actor& worker : replicas) {
          st.schedulers.push_back(spawn_scheduler(self->system(), config, step_timeout, text,
                                                  caf::actor_cast<step_output_sink>(self), worker));
          self->link_to(st.schedulers.back());
          self->link_to(worker);
        }
        self->set_down_handler([self](caf::down_msg& down) {
          auto& st = self->state;
          st.monitored.erase(down.source);
          for (const auto& [id, client] : st.clients)
            if (client.requester == down.source)
              self->request(scheduler_of(st, id), caf::infinite, abort_atom_v, id).then([](bool) {});
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
              return self->delegate(scheduler_of(self->state, id), abort_atom_v, std::move(id));
            },
            [self](stats_atom) { return stats(self); },
            [self](shutdown_atom) {
              auto& st = self->state;
              st.table->abort_all(st.events);
              // Links take the schedulers and the workers down with the engine.
              self->quit(caf::exit_reason::user_shutdown);
            },
            [self](lost_atom, std::int32_t replica, const std::string& why) {
              auto& st = self->state;
              if (!from_this_node(self) || replica < 0 ||
                  static_cast<std::size_t>(replica) >= st.schedulers.size())
                return;
              st.router->set_serving(static_cast<std::size_t>(replica), false);
              self->send(st.schedulers[static_cast<std::size_t>(replica)], lost_atom_v, why);
            },
            [self](StepOutputs& out) {
              auto& st = self->state;
              if (!out.worker_lost.empty() || out.worker_restored) {
                const caf::strong_actor_ptr& from = self->current_sender();
                for (std::size_t r = 0; r < st.schedulers.size(); ++r) {
                  if (caf::actor_cast<caf::strong_actor_ptr>(st.schedulers[r]) != from) continue;
                  st.router->set_serving(r, out.worker_restored);
                  // Only now does a request sent after this line reach a serving scheduler.
                  if (out.worker_restored)
                    log_line(LogLevel::info,
                             "replica " + std::to_string(r) + " takes requests again");
                }
              }
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
      spec.tokenizer, spec.chat, spec.sampling_defaults, vocab_size, std::move(replicas),
      spec.engine, spec.step_timeout);
  return engine;
}

}  // namespace minivllm
