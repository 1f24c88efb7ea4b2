// minivllm worker: one rank of an engine in another process or on another host
// (parallel.remote_workers; run_worker in actors/include/minivllm/actors/runtime.hpp).
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/config.hpp>

#include "cli/commands.hpp"

namespace minivllm::cli {
namespace {

struct WorkerCommand {
  std::string connect;
  std::string token_file;
  std::vector<std::string> overrides;
  int connect_timeout_s = 60;
};

}  // namespace

void add_worker_command(CLI::App& app) {
  auto cmd = std::make_shared<WorkerCommand>();
  CLI::App* worker = app.add_subcommand(
      "worker", "Run one rank of an engine started elsewhere with parallel.remote_workers");
  worker->add_option("--connect", cmd->connect, "The engine's parallel.listen, HOST:PORT")
      ->required();
  worker->add_option("--token-file", cmd->token_file,
                     "The engine's parallel.join_token_file (the same secret)")
      ->required();
  worker->add_option("--set", cmd->overrides,
                     "model.path=DIR, runtime.plugin_dirs=[...] or parallel.devices=[i]: this "
                     "host's values (repeatable)");
  worker->add_option("--connect-timeout", cmd->connect_timeout_s,
                     "Seconds to keep trying to reach the engine")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  worker->callback([cmd] {
    const HostPort engine = parse_host_port(cmd->connect, "--connect");
    WorkerJoin join{engine.host, engine.port, cmd->token_file, cmd->overrides,
                    std::chrono::seconds(cmd->connect_timeout_s)};
    caf::actor_system_config cfg;
    add_runtime_types(cfg);
    set_low_latency_scheduling(cfg);
    caf::actor_system sys{cfg};
    run_worker(sys, join);
  });
}

}  // namespace minivllm::cli
