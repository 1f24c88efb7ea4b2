#include <minivllm/actors/runtime.hpp>

#include <algorithm>
#include <cstdint>
#include <thread>

#include <caf/all.hpp>

#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

#include "actors/engine_actor.hpp"
#include "actors/loaded_model_runner.hpp"
#include "actors/runtime_error.hpp"
#include "actors/worker_actor.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {

RuntimeSpec runtime_spec(const Config& config) {
  const ModelConfig model = load_model_config(config.model.path / "config.json");
  RuntimeSpec spec;
  const std::int64_t max_model_len =
      config.model.max_model_len > 0 ? config.model.max_model_len : model.max_position_embeddings;
  spec.engine.scheduler = {static_cast<int>(config.scheduler.max_num_seqs),
                           static_cast<int>(config.scheduler.max_num_batched_tokens),
                           static_cast<int>(max_model_len),
                           config.scheduler.enable_chunked_prefill};
  spec.engine.scheduler.validate();
  spec.engine.cache = {static_cast<int>(config.cache.block_size),
                       static_cast<int>(config.cache.num_blocks),
                       config.cache.enable_prefix_caching};
  for (std::int64_t id : model.eos_token_ids)
    spec.engine.eos_token_ids.push_back(static_cast<std::int32_t>(id));
  spec.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_directory(config.model.path));
  spec.sized_num_blocks = std::make_shared<std::int64_t>(config.cache.num_blocks);
  spec.make_runner = [config, sized = spec.sized_num_blocks] {
    LoadedRunner loaded = load_model_runner(config);
    *sized = loaded.num_blocks;  // read by spawn_runtime after the worker's ready reply
    return std::move(loaded.runner);
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

// CAF's pool threads for the runtime's own actors under set_low_latency_scheduling.
constexpr unsigned kMaxPoolThreads = 4;

void set_low_latency_scheduling(caf::actor_system_config& cfg) {
  cfg.set("work-stealing.moderate-poll-attempts", 0);
  // A step hands work between a few actors: more pool threads only add wake-ups (a 256-sequence
  // decode step took 85-90 us with 16 threads on a 16-core host, 68 us confined to 2-4 cores).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<std::int64_t>(std::min(cores, kMaxPoolThreads)));
}

engine_actor spawn_runtime(caf::actor_system& sys, RuntimeSpec spec) {
  worker_actor worker = spawn_worker(sys, std::move(spec.make_runner), spec.engine.eos_token_ids);
  caf::scoped_actor self{sys};
  std::int32_t vocab_size = 0;
  std::string error;
  self->request(worker, caf::infinite, ready_atom_v)
      .receive([&](std::int32_t vocab) { vocab_size = vocab; },
               [&](caf::error& err) { error = error_text(sys, err); });
  if (!error.empty()) {
    self->send_exit(worker, caf::exit_reason::user_shutdown);
    throw Error(error);
  }
  if (spec.engine.cache.num_blocks == 0 && spec.sized_num_blocks)
    spec.engine.cache.num_blocks = static_cast<int>(*spec.sized_num_blocks);
  return spawn_engine(sys, spec, vocab_size, std::move(worker));
}

std::string error_text(caf::actor_system& sys, const caf::error& err) {
  if (err.category() == runtime_error_category && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  return sys.render(err);
}

}  // namespace minivllm
