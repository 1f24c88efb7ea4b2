#include <minivllm/actors/runtime.hpp>

#include <algorithm>
#include <cstdint>

#include <caf/all.hpp>

#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

#include "actors/engine_actor.hpp"
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
  if (config.runtime.backend == Backend::cpu)  // every rank a thread on the host
    spec.devices.assign(static_cast<std::size_t>(config.parallel.tensor_parallel_size *
                                                 config.parallel.data_parallel_size),
                        0);
  else
    spec.devices.assign(config.parallel.devices.begin(), config.parallel.devices.end());
  spec.log_level = config.runtime.log_level;
  spec.step_timeout = std::chrono::seconds(config.runtime.step_timeout_s);
  spec.summary = log_format("model %s (%s), %s on the %s backend",
                            config.model.path.string().c_str(), model.architectures.front().c_str(),
                            std::string(dtype_name(config.model.dtype)).c_str(),
                            std::string(backend_name(config.runtime.backend)).c_str());
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

engine_actor spawn_runtime(caf::actor_system& sys, RuntimeSpec spec) {
  set_log_level(spec.log_level);
  log_line(LogLevel::info, "loading " + spec.summary);
  const std::size_t replicas = static_cast<std::size_t>(std::max(1, spec.data_parallel_size));
  if (spec.devices.empty() || spec.devices.size() % replicas != 0)
    throw Error("the runtime needs the same number of devices, at least one, for each of its " +
                std::to_string(replicas) + " replicas");
  const std::size_t ranks = spec.devices.size() / replicas;
  // Replica m: ranks on devices [m * ranks, (m + 1) * ranks), its own tensor-parallel group.
  std::vector<worker_actor> all_workers, groups;
  for (std::size_t m = 0; m < replicas; ++m) {
    std::shared_ptr<const TensorParallelGroup> group;
    if (spec.make_group) group = std::make_shared<const TensorParallelGroup>(spec.make_group());
    std::vector<worker_actor> workers;
    std::vector<int> devices(spec.devices.begin() + static_cast<std::ptrdiff_t>(m * ranks),
                             spec.devices.begin() + static_cast<std::ptrdiff_t>((m + 1) * ranks));
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      const WorkerPlace place{devices[rank], static_cast<int>(rank), group};
      workers.push_back(spawn_worker(sys, [make = spec.make_runner, place] { return make(place); },
                                     spec.engine.eos_token_ids));
    }
    all_workers.insert(all_workers.end(), workers.begin(), workers.end());
    groups.push_back(spawn_worker_group(sys, std::move(workers), std::move(devices)));
  }
  caf::scoped_actor self{sys};
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
  if (!error.empty()) {
    for (const worker_actor& w : all_workers) self->send_exit(w, caf::exit_reason::user_shutdown);
    for (const worker_actor& g : groups) self->send_exit(g, caf::exit_reason::user_shutdown);
    throw Error(error);
  }
  if (spec.engine.cache.num_blocks == 0)
    spec.engine.cache.num_blocks = static_cast<int>(ready.num_blocks);
  const CacheConfig& cache = spec.engine.cache;
  std::string devices;
  for (int d : spec.devices) devices += (devices.empty() ? "" : ", ") + std::to_string(d);
  if (spec.devices.size() > 1)
    devices += " (" + std::to_string(replicas) + " replica" + (replicas > 1 ? "s" : "") + " of " +
               std::to_string(ranks) + " tensor-parallel rank" + (ranks > 1 ? "s" : "") + ")";
  log_line(LogLevel::info,
           log_format("ready: KV cache of %d blocks x %d tokens (%lld tokens) on device%s %s, "
                      "prefix caching %s, at most %d sequences and %d tokens a step, "
                      "max_model_len %d",
                      cache.num_blocks, cache.block_size,
                      static_cast<long long>(cache.num_blocks) * cache.block_size,
                      spec.devices.size() > 1 ? "s" : "", devices.c_str(),
                      cache.enable_prefix_caching ? "on" : "off", spec.engine.scheduler.max_num_seqs,
                      spec.engine.scheduler.max_num_batched_tokens,
                      spec.engine.scheduler.max_model_len));
  return spawn_engine(sys, spec, ready.vocab_size, std::move(groups));
}

bool is_request_refused(const caf::error& err) {
  return err.category() == runtime_error_category &&
         err.code() == static_cast<std::uint8_t>(RuntimeErrorCode::refused);
}

bool is_device_lost(const caf::error& err) {
  return err.category() == runtime_error_category &&
         err.code() == static_cast<std::uint8_t>(RuntimeErrorCode::device_lost);
}

std::string error_text(caf::actor_system& sys, const caf::error& err) {
  if (err.category() == runtime_error_category && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  return sys.render(err);
}

}  // namespace minivllm
