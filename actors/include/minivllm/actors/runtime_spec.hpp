#pragma once
// Everything the runtime's actors need, prepared once (CAF-free).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "engine/llm_engine.hpp"
#include "engine/model_runner.hpp"

namespace minivllm {

class Tokenizer;

struct RuntimeSpec {
  EngineConfig engine;
  std::shared_ptr<const Tokenizer> tokenizer;  // null: token-id prompts only, no text
  // Builds the model runner; runs on the worker's own thread. Throws minivllm::Error.
  std::function<std::unique_ptr<ModelRunner>()> make_runner;
  // Where make_runner leaves the KV cache's block count when engine.cache.num_blocks is 0 (sized
  // from device memory on the worker); spawn_runtime reads it once the worker is ready.
  std::shared_ptr<std::int64_t> sized_num_blocks;
  LogLevel log_level = LogLevel::info;  // runtime.log_level, set when the runtime starts
  std::string summary;                  // the model, dtype and backend, for the start-up log
};

// From a launch Config: the model folder's tokenizer and config.json (EOS ids, max_model_len),
// and a runner that loads the plugin model on the configured backend. Throws minivllm::Error.
RuntimeSpec runtime_spec(const Config& config);

}  // namespace minivllm
