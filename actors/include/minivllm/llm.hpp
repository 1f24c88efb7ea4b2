#pragma once
// The synchronous facade for programs that do not use actors: it runs the runtime's actors in
// its own actor system and blocks until the outputs are in. Safe to call from several threads
// at once; their requests are batched together. CAF-free.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/actors/requests.hpp>
#include <minivllm/config.hpp>

namespace minivllm {

struct RuntimeSpec;  // actors/runtime_spec.hpp, not installed

// A request's outcome: its output, or why it was refused or failed.
struct GenerateResult {
  RequestOutput output;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

class LLM {
 public:
  // Loads the model (runtime_spec(config)); throws minivllm::Error.
  explicit LLM(const Config& config);
  explicit LLM(RuntimeSpec spec);
  // Aborts whatever still runs and stops the actors.
  ~LLM();
  LLM(const LLM&) = delete;
  LLM& operator=(const LLM&) = delete;

  // Outputs in prompt order; throws minivllm::Error naming the first request that failed
  // (the others still ran to the end).
  std::vector<RequestOutput> generate(const std::vector<std::string>& prompts,
                                      const SamplingParams& params);
  std::vector<RequestOutput> generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                      const SamplingParams& params);
  // All requests are queued at once; one result each, in order; never throws for a request.
  // `progress` (optional) is called with the number of results collected so far. `on_delta`
  // (optional) gets every request's deltas as they are generated, in order per completion, on a
  // runtime thread, one call at a time; all of them before generate returns.
  std::vector<GenerateResult> generate(std::vector<GenerateRequest> requests,
                                       const std::function<void(std::size_t)>& progress = {},
                                       const std::function<void(const RequestDelta&)>& on_delta = {});

  EngineStats stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minivllm
