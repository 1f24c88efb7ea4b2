#include <minivllm/actors/runtime.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

#include "actors/collective_hub.hpp"
#include "actors/engine_actor.hpp"
#include "actors/join_door.hpp"
#include "actors/runtime_spec.hpp"
#include "actors/loaded_model_runner.hpp"
#include "actors/runtime_error.hpp"
#include "actors/usable_cores.hpp"
#include "actors/worker_actor.hpp"
#include "actors/worker_group.hpp"
#include "backend/make_ops.hpp"
#include "checkpoint/config_json.hpp"
#include "engine/generation_config.hpp"
#include "log/log.hpp"
#include "model/plugin_registry.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {

namespace {

// The family's format for the tokenizer's chat_template, or a renderer that says why there is none.
ChatRenderer chat_renderer(const ModelFamily& family, const PluginRegistry& plugins,
                           const ModelConfig& model, const Config& config,
                           const Tokenizer& tokenizer) {
  if (const ChatFormat format = family.chat_format(tokenizer.chat_template()))
    return [format](std::span<const ChatMessage> messages, const ChatOptions& options) {
      return format(messages, options);
    };
  const std::string where = (config.model.path / "tokenizer_config.json").string();
  const std::string why =
      tokenizer.chat_template().empty()
          ? where + " has no chat_template"
          : where + ": its chat_template is not one the plugin for " +
                model.architectures.front() + " (" +
                plugins.plugin_of(model.architectures.front()).string() + ") renders";
  return [why](std::span<const ChatMessage>, const ChatOptions&) -> std::string {
    throw Error("chat messages: " + why);
  };
}

}  // namespace

RuntimeSpec runtime_spec(const Config& config) {
  const auto config_file = config.model.path / "config.json";
  const std::unique_ptr<ConfigFields> fields = load_config_fields(config_file);
  const ModelConfig model = model_config_from(*fields);
  const PluginRegistry plugins = PluginRegistry::load(config.runtime.plugin_dirs);
  const ModelFamily& family = plugins.family(model, config_file);
  family.check_config(model, *fields);
  RuntimeSpec spec;
  const std::int64_t max_model_len = resolve_max_model_len(config, model);
  spec.engine.scheduler = {static_cast<int>(config.scheduler.max_num_seqs),
                           static_cast<int>(config.scheduler.max_num_batched_tokens),
                           static_cast<int>(max_model_len),
                           config.scheduler.enable_chunked_prefill};
  spec.engine.scheduler.validate();
  spec.engine.cache = {static_cast<int>(config.cache.block_size),
                       static_cast<int>(config.cache.num_blocks),
                       config.cache.enable_prefix_caching};
  // generation_config.json (unless model.generation_config = "none"): the sampling defaults,
  // and its EOS ids over config.json's, as vLLM takes them.
  const GenerationConfig generation = config.model.generation_config
                                          ? load_generation_config(config.model.path)
                                          : GenerationConfig{};
  spec.sampling_defaults = generation.sampling;
  for (std::int64_t id : generation.eos_token_ids.empty() ? model.eos_token_ids
                                                          : generation.eos_token_ids)
    spec.engine.eos_token_ids.push_back(static_cast<std::int32_t>(id));
  spec.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_directory(config.model.path));
  spec.chat = chat_renderer(family, plugins, model, config, *spec.tokenizer);
  spec.data_parallel_size = static_cast<int>(config.parallel.data_parallel_size);
  const std::int64_t ranks = config.parallel.tensor_parallel_size * config.parallel.data_parallel_size;
  if (config.runtime.backend == Backend::cpu)  // every local rank a thread on the host
    spec.devices.assign(static_cast<std::size_t>(ranks - config.parallel.remote_workers), 0);
  else
    spec.devices.assign(config.parallel.devices.begin(), config.parallel.devices.end());
  if (config.parallel.remote_workers > 0) {
    RemoteWorkers& remote = spec.remote;
    remote.count = static_cast<int>(config.parallel.remote_workers);
    remote.listen = parse_host_port(config.parallel.listen, "parallel.listen");
    remote.token = read_join_token(config.parallel.join_token_file);
    remote.join_timeout = std::chrono::seconds(config.parallel.join_timeout_s);
    // A worker's process runs one rank, on its own device (its --set parallel.devices).
    Config worker = config;
    worker.parallel.remote_workers = ranks - 1;
    worker.parallel.devices.clear();
    if (ranks == 1) {  // no other rank: nothing for the worker's view to listen for
      worker.parallel.listen.clear();
      worker.parallel.join_token_file.clear();
    }
    remote.config_toml = to_toml(worker);
  }
  spec.log_level = config.runtime.log_level;
  spec.step_timeout = std::chrono::seconds(config.runtime.step_timeout_s);
  spec.summary = log_format("model %s (%s), %s on the %s backend%s",
                            config.model.path.string().c_str(), model.architectures.front().c_str(),
                            std::string(dtype_name(config.model.dtype)).c_str(),
                            std::string(backend_name(config.runtime.backend)).c_str(),
                            config.cache.kv_cache_dtype == KvCacheDtype::fp8_e4m3
                                ? ", KV cache fp8_e4m3"
                                : "");
  if (config.parallel.tensor_parallel_size > 1)
    spec.make_group = [config] { return make_tensor_parallel_group(config); };
  spec.make_runner = [config](const WorkerPlace& place) {
    return load_model_runner(config, place.device, place.group.get(), place.rank);
  };
  return spec;
}

void add_runtime_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::minivllm_api>();
  cfg.add_message_types<caf::id_block::minivllm_internal>();
  cfg.add_message_types<caf::id_block::minivllm_remote>();
  // CAF's network layer, for the workers of other processes (parallel.remote_workers).
  cfg.load<caf::io::middleman>();
  cfg.add_error_category(runtime_error_category,
                         [](std::uint8_t, caf::atom_value, const caf::message& context) {
                           return context.match_elements<std::string>()
                                      ? context.get_as<std::string>(0)
                                      : std::string("minivllm error");
                         });
}

// CAF's pool threads for the runtime's own actors under set_low_latency_scheduling. A step hands
// work between a few actors: more threads only add wake-ups, spinners and moves of the
// scheduler's data between cores (a 256-sequence decode step on the H200's 16-core host, pool
// spinning: 4 threads 31.9 us and 124 us of CPU, 2 threads 30.9 us and 89 us of CPU).
constexpr std::int64_t kPoolThreads = 2;

// Where cores are plenty, how many times an idle pool thread polls its queue before it sleeps:
// about 0.3 ms on the H200's host, longer than a decode step's turn-around, so the worker's
// reply to the scheduler finds a thread awake (CAF's default, 100, lasts a few µs).
constexpr std::int64_t kSpinPollAttempts = 10000;

void set_low_latency_scheduling(caf::actor_system_config& cfg) {
  cfg.set("work-stealing.moderate-poll-attempts", 0);
  cfg.set("scheduler.max-threads", std::min<std::int64_t>(usable_cores(), kPoolThreads));
  if (may_spin()) cfg.set("work-stealing.aggressive-poll-attempts", kSpinPollAttempts);
}

engine_actor spawn_runtime(caf::actor_system& sys, const Config& config) {
  return spawn_runtime(sys, runtime_spec(config));
}

namespace {

// The join door, published on parallel.listen, for the remote ranks [first_remote, total).
join_door_actor open_join_door(caf::actor_system& sys, const RuntimeSpec& spec, int ranks,
                               int first_remote, const std::vector<std::string>& nccl_ids,
                               const std::vector<caf::actor>& hubs, std::string& address) {
  if (!sys.has_middleman())
    throw Error("parallel.remote_workers: this actor system has no network layer (load "
                "caf::io::middleman, as add_runtime_types does)");
  const HostPort& listen = spec.remote.listen;
  JoinDoorSpec door{spec.remote.token, spec.remote.config_toml, spec.engine.eos_token_ids,
                    ranks, first_remote, static_cast<int>(spec.devices.size()) + spec.remote.count,
                    nccl_ids, hubs, spec.remote.join_timeout, ""};
  join_door_actor actor = spawn_join_door(sys, door);
  auto port = sys.middleman().publish(actor, listen.port, listen.host.c_str(), true);
  if (!port) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    throw Error("parallel.listen = \"" + listen.host + ":" + std::to_string(listen.port) +
                "\": cannot listen there: " + sys.render(port.error()));
  }
  address = listen.host + ":" + std::to_string(*port);
  log_line(LogLevel::info, log_format("waiting for %d remote worker%s on %s (parallel.listen), at "
                                      "most %lld s",
                                      spec.remote.count, spec.remote.count > 1 ? "s" : "",
                                      address.c_str(),
                                      static_cast<long long>(spec.remote.join_timeout.count())));
  caf::scoped_actor self{sys};  // the door takes its address from this process only
  self->send(actor, address);
  return actor;
}

}  // namespace

engine_actor spawn_runtime(caf::actor_system& sys, RuntimeSpec spec) {
  set_log_level(spec.log_level);
  log_line(LogLevel::info, "loading " + spec.summary);
  const std::size_t replicas = static_cast<std::size_t>(std::max(1, spec.data_parallel_size));
  const std::size_t local = spec.devices.size();
  const std::size_t total = local + static_cast<std::size_t>(spec.remote.count);
  if (total == 0 || total % replicas != 0)
    throw Error("the runtime needs the same number of workers, at least one, for each of its " +
                std::to_string(replicas) + " replicas");
  const std::size_t ranks = total / replicas;
  // Replica m: workers [m * ranks, (m + 1) * ranks), its own tensor-parallel group; the remote
  // ones are the last, and talk to the local ones through a hub on the cpu backend.
  std::vector<std::shared_ptr<const TensorParallelGroup>> tp_groups(replicas);
  std::vector<collective_hub_actor> hubs(replicas);
  std::vector<std::string> nccl_ids(replicas);
  for (std::size_t m = 0; m < replicas; ++m) {
    if (!spec.make_group) continue;
    TensorParallelGroup group = spec.make_group();
    if (spec.remote.count > 0 && group.cpu) {
      hubs[m] = spawn_collective_hub(sys, group.ranks);
      group.cpu = hub_collectives(sys, hubs[m], group.ranks, spec.step_timeout);
    }
    if (!group.cpu) nccl_ids[m].assign(group.nccl_id.begin(), group.nccl_id.end());
    tp_groups[m] = std::make_shared<const TensorParallelGroup>(std::move(group));
  }
  caf::scoped_actor self{sys};
  std::vector<caf::actor> stop;  // what a failed start stops
  const auto fail = [&](const std::string& error) {
    for (const caf::actor& a : stop) self->send_exit(a, caf::exit_reason::user_shutdown);
    throw Error(error);
  };
  join_door_actor door;
  std::string address;
  if (spec.remote.count > 0) {
    std::vector<caf::actor> hub_handles;
    for (const collective_hub_actor& h : hubs) hub_handles.push_back(caf::actor_cast<caf::actor>(h));
    door = open_join_door(sys, spec, static_cast<int>(ranks), static_cast<int>(local), nccl_ids,
                          hub_handles, address);
    stop.push_back(caf::actor_cast<caf::actor>(door));
  }
  for (const collective_hub_actor& h : hubs)
    if (h) stop.push_back(caf::actor_cast<caf::actor>(h));
  std::vector<std::vector<GroupMember>> members(replicas);
  for (std::size_t g = 0; g < local; ++g) {
    const std::size_t m = g / ranks, rank = g % ranks;
    const WorkerPlace place{spec.devices[g], static_cast<int>(rank), tp_groups[m]};
    worker_actor w = spawn_worker(sys, [make = spec.make_runner, place] { return make(place); },
                                  spec.engine.eos_token_ids);
    stop.push_back(caf::actor_cast<caf::actor>(w));
    members[m].push_back({static_cast<std::int32_t>(rank), w,
                          rank_name(static_cast<int>(m), static_cast<int>(rank),
                                    static_cast<int>(replicas)) +
                              " (device " + std::to_string(spec.devices[g]) + ")"});
  }
  if (door) {
    std::string error;
    self->request(door, caf::infinite, wait_atom_v)
        .receive(
            [&](GroupMembers& joined) {
              std::size_t g = local;
              for (GroupMember& member : joined.members) {
                stop.push_back(caf::actor_cast<caf::actor>(member.worker));
                members[g++ / ranks].push_back(std::move(member));
              }
            },
            [&](caf::error& err) { error = error_text(sys, err); });
    if (!error.empty()) fail(error);
  }
  std::vector<worker_actor> groups;
  for (std::size_t m = 0; m < replicas; ++m) {
    groups.push_back(spawn_worker_group(sys, std::move(members[m]), hubs[m]));
    stop.push_back(caf::actor_cast<caf::actor>(groups.back()));
  }
  WorkerReady ready;
  std::string error;
  for (std::size_t m = 0; m < replicas && error.empty(); ++m)
    self->request(groups[m], caf::infinite, ready_atom_v)
        .receive(
            [&](WorkerReady& r) {
              if (m == 0) ready = r;
              if (r.vocab_size != ready.vocab_size)
                error = "replica " + std::to_string(m) + " has another vocabulary than replica 0";
              ready.num_blocks = std::min(ready.num_blocks, r.num_blocks);  // one cache size
            },
            [&](caf::error& err) {
              error = (replicas > 1 ? "replica " + std::to_string(m) + ": " : std::string()) +
                      error_text(sys, err);
            });
  if (!error.empty()) fail(error);
  if (spec.engine.cache.num_blocks == 0)
    spec.engine.cache.num_blocks = static_cast<int>(ready.num_blocks);
  const CacheConfig& cache = spec.engine.cache;
  std::string devices;
  for (int d : spec.devices) devices += (devices.empty() ? "" : ", ") + std::to_string(d);
  devices = spec.devices.empty() ? "" : "device" + std::string(spec.devices.size() > 1 ? "s " : " ") + devices;
  if (spec.remote.count > 0)
    devices += (devices.empty() ? "" : " and ") + std::to_string(spec.remote.count) + " remote worker" +
               (spec.remote.count > 1 ? "s" : "");
  if (total > 1)
    devices += " (" + std::to_string(replicas) + " replica" + (replicas > 1 ? "s" : "") + " of " +
               std::to_string(ranks) + " tensor-parallel rank" + (ranks > 1 ? "s" : "") + ")";
  log_line(LogLevel::info,
           log_format("ready: KV cache of %d blocks x %d tokens (%lld tokens) on %s, "
                      "prefix caching %s, at most %d sequences and %d tokens a step, "
                      "max_model_len %d",
                      cache.num_blocks, cache.block_size,
                      static_cast<long long>(cache.num_blocks) * cache.block_size, devices.c_str(),
                      cache.enable_prefix_caching ? "on" : "off", spec.engine.scheduler.max_num_seqs,
                      spec.engine.scheduler.max_num_batched_tokens,
                      spec.engine.scheduler.max_model_len));
  engine_actor engine = spawn_engine(sys, spec, ready.vocab_size, groups);
  if (door) {
    self->send(door, std::move(groups), caf::actor_cast<caf::actor>(engine));
    // The door and the hubs end with the engine (its workers are linked to it).
    std::vector<caf::actor> helpers;
    helpers.push_back(caf::actor_cast<caf::actor>(door));
    for (const collective_hub_actor& h : hubs)
      if (h) helpers.push_back(caf::actor_cast<caf::actor>(h));
    caf::actor_cast<caf::abstract_actor*>(engine)->attach_functor([helpers] {
      for (const caf::actor& a : helpers) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    });
  }
  return engine;
}

bool is_request_refused(const caf::error& err) {
  return err.category() == runtime_error_category &&
         err.code() == static_cast<std::uint8_t>(RuntimeErrorCode::refused);
}

bool is_device_lost(const caf::error& err) {
  return err.category() == runtime_error_category &&
         err.code() == static_cast<std::uint8_t>(RuntimeErrorCode::device_lost);
}

bool is_worker_lost(const caf::error& err) {
  return err.category() == runtime_error_category &&
         err.code() == static_cast<std::uint8_t>(RuntimeErrorCode::worker_lost);
}

std::string error_text(caf::actor_system& sys, const caf::error& err) {
  if (err.category() == runtime_error_category && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  return sys.render(err);
}

EngineStats engine_stats(caf::actor_system& sys, const engine_actor& engine) {
  caf::scoped_actor self{sys};
  EngineStats stats;
  self->request(engine, caf::infinite, stats_atom_v)
      .receive([&](EngineStats& s) { stats = std::move(s); },
               [&](caf::error& err) { throw Error(error_text(sys, err)); });
  return stats;
}

}  // namespace minivllm
