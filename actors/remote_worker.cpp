// run_worker (include/minivllm/actors/runtime.hpp): a worker's side of the join handshake.
#include <minivllm/actors/runtime.hpp>

#include <thread>

#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <minivllm/error.hpp>

#include "actors/collective_hub.hpp"
#include "actors/join_door.hpp"
#include "actors/join_token.hpp"
#include "actors/loaded_model_runner.hpp"
#include "actors/remote_messages.hpp"
#include "actors/worker_actor.hpp"
#include "log/log.hpp"

namespace minivllm {
namespace {

// The handshake's messages get this long for an answer: the engine answers them at once.
constexpr std::chrono::seconds kHandshakeTimeout{30};

// The keys a worker may set itself: where things are on its host, and its device.
void check_worker_overrides(const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (key != "model.path" && key != "runtime.plugin_dirs" && key != "parallel.devices")
      throw Error("--set " + o + ": a worker may set only model.path, runtime.plugin_dirs and "
                  "parallel.devices; the engine's configuration gives the rest");
  }
}

std::string this_process() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '?';
  return "pid " + std::to_string(getpid()) + " on " + host;
}

join_door_actor connect(caf::actor_system& sys, const WorkerJoin& join, const std::string& where) {
  const auto deadline = std::chrono::steady_clock::now() + join.connect_timeout;
  for (;;) {
    auto door = sys.middleman().remote_actor<join_door_actor>(join.host, join.port);
    if (door) return *door;
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error("cannot reach an engine at " + where + " within " +
                  std::to_string(join.connect_timeout.count()) + " s: " + sys.render(door.error()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Sends `message` and waits for its answer; an error answer throws, prefixed with `what`.
template <class Answer, class Handle, class Message>
Answer ask(caf::scoped_actor& self, const Handle& to, Message message, const std::string& what,
           caf::duration timeout = caf::duration{kHandshakeTimeout}) {
  Answer answer{};
  std::string error;
  self->request(to, timeout, std::move(message))
      .receive([&](Answer& a) { answer = std::move(a); },
               [&](caf::error& err) { error = error_text(self->system(), err); });
  if (!error.empty()) throw Error(what + ": " + error);
  return answer;
}

}  // namespace

void run_worker(caf::actor_system& sys, const WorkerJoin& join) {
  check_worker_overrides(join.overrides);
  const std::string token = read_join_token(join.token_file);
  const std::string where = join.host + ":" + std::to_string(join.port);
  const join_door_actor door = connect(sys, join, where);
  caf::scoped_actor self{sys};
  const std::string nonce = ask<std::string>(self, door, hello_atom_v, "the engine at " + where);
  JoinGrant grant = ask<JoinGrant>(
      self, door,
      JoinProof{nonce, join_proof(token, nonce), this_process(), caf::actor_cast<caf::actor>(self)},
      "the engine at " + where);
  const Config config = parse_config(grant.config_toml, "the configuration of the engine at " + where,
                                     std::filesystem::current_path(), join.overrides);
  set_log_level(config.runtime.log_level);
  const int device = static_cast<int>(config.parallel.devices.front());
  const std::string name = "worker rank " + std::to_string(grant.rank) +
                           (config.parallel.data_parallel_size > 1
                                ? " of replica " + std::to_string(grant.replica)
                                : std::string());
  log_line(LogLevel::info, "joined the engine at " + where + " as " + name + "; loading " +
                               config.model.path.string() + " on the " +
                               std::string(backend_name(config.runtime.backend)) + " backend");
  std::shared_ptr<const TensorParallelGroup> group;
  if (grant.ranks > 1) {
    TensorParallelGroup g;
    g.ranks = grant.ranks;
    if (config.runtime.backend == Backend::cpu) {
      if (!grant.hub) throw Error("the engine at " + where + " sent no collectives hub");
      g.cpu = hub_collectives(sys, caf::actor_cast<collective_hub_actor>(grant.hub), g.ranks,
                              std::chrono::seconds(config.runtime.step_timeout_s));
    } else {
      if (grant.nccl_id.size() != g.nccl_id.size())
        throw Error("the engine at " + where + " sent an NCCL id of " +
                    std::to_string(grant.nccl_id.size()) + " bytes");
      std::copy(grant.nccl_id.begin(), grant.nccl_id.end(), g.nccl_id.begin());
    }
    group = std::make_shared<const TensorParallelGroup>(std::move(g));
  }
  const int rank = grant.rank;
  worker_actor worker = spawn_worker(
      sys, [config, device, group, rank] { return load_model_runner(config, device, group.get(), rank); },
      grant.eos_token_ids);
  try {
    ask<WorkerReady>(self, worker, ready_atom_v, name + " did not load", caf::infinite);
    ask<bool>(self, door, JoinedWorker{grant.ticket, worker}, "the engine at " + where);
  } catch (const Error&) {
    self->send_exit(worker, caf::exit_reason::user_shutdown);
    throw;
  }
  log_line(LogLevel::info, name + " serves the engine at " + where);
  self->monitor(door);
  self->monitor(worker);
  self->receive([&](caf::down_msg& down) {
    if (down.source == door.address())
      log_line(LogLevel::info, "the engine at " + where + " is gone (" + sys.render(down.reason) +
                                   "): the worker stops");
    else
      log_line(LogLevel::info, name + " stopped (" + sys.render(down.reason) + ")");
  });
  self->send_exit(worker, caf::exit_reason::user_shutdown);
}

}  // namespace minivllm
