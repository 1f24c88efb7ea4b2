#pragma once
// Everything the runtime's actors need, prepared once (CAF-free).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/config.hpp>
#include "backend/tensor_parallel_group.hpp"
#include "engine/engine_core.hpp"
#include <minivllm/request.hpp>
#include "engine/model_runner.hpp"

namespace minivllm {

class Tokenizer;

// A worker's model runner and the KV-cache blocks it holds.
struct LoadedRunner {
  std::unique_ptr<ModelRunner> runner;
  std::int64_t num_blocks = 0;  // sized from device memory when the config says 0
};

// Where one worker runs: its device and its rank in the tensor-parallel group.
struct WorkerPlace {
  int device = 0;
  int rank = 0;
  std::shared_ptr<const TensorParallelGroup> group;  // null: a group of one
};

// The ranks `minivllm worker` processes run (parallel.remote_workers): the last ones, after the
// local ranks on `devices`.
struct RemoteWorkers {
  int count = 0;
  HostPort listen;     // parallel.listen
  std::string token;   // parallel.join_token_file's secret
  std::chrono::seconds join_timeout{120};
  std::string config_toml;  // the configuration a worker's process loads (JoinGrant)
};

struct RuntimeSpec {
  EngineConfig engine;
  std::shared_ptr<const Tokenizer> tokenizer;  // null: token-id prompts only, no text
  ChatRenderer chat;  // empty: no chat messages (the model family's format for the tokenizer)
  SamplingDefaults sampling_defaults;  // for the fields a request leaves unset
  // One worker per entry, each on its device (parallel.devices), replica by replica: replica m's
  // rank r is worker m * ranks + r, ranks = (devices.size() + remote.count) / data_parallel_size;
  // the workers past devices.size() are remote.
  std::vector<int> devices{0};
  RemoteWorkers remote;  // ranks after those on `devices`
  int data_parallel_size = 1;  // replicas, each a scheduler and a worker group
  // The group a replica's ranks share, made once per replica and start (empty: the workers are
  // not a tensor-parallel group, each runs the whole model).
  std::function<TensorParallelGroup()> make_group;
  // Builds a worker's model runner for its place; runs on that worker's own thread. Throws
  // minivllm::Error. The engine's KV cache has the fewest blocks any worker holds, unless
  // engine.cache.num_blocks says how many.
  std::function<LoadedRunner(const WorkerPlace& place)> make_runner;
  // A step the workers have not answered within this long fails its requests
  // (runtime.step_timeout_s).
  std::chrono::milliseconds step_timeout{120'000};
  LogLevel log_level = LogLevel::info;  // runtime.log_level, set when the runtime starts
  std::string summary;                  // the model, dtype and backend, for the start-up log
};

// From a launch Config: the model folder's tokenizer and config.json (EOS ids, max_model_len),
// and a runner that loads the plugin model on the configured backend. Throws minivllm::Error.
RuntimeSpec runtime_spec(const Config& config);

}  // namespace minivllm
