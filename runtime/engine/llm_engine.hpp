#pragma once
// The engine driven synchronously, one step per call: the request table, the engine core and a
// step executor on one thread, the same three the actors drive with messages (actors/). Outputs
// come per SamplingParams::output_kind: cumulative, delta or final only.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine_core.hpp"
#include "engine/model_runner.hpp"
#include <minivllm/request_output.hpp>
#include "engine/request_table.hpp"
#include <minivllm/sampling_params.hpp>
#include "engine/step_executor.hpp"
#include "engine/text_stream.hpp"

namespace minivllm {

class LLMEngine {
 public:
  // `runner` must outlive the engine. Without text streams outputs carry no text and requests
  // with stop strings are refused.
  LLMEngine(const EngineConfig& config, ModelRunner& runner, TextStreams text = {});

  // Throws minivllm::Error for a bad request (duplicate id, bad token id, bad params, too long
  // for max_model_len, can never fit the cache, stop strings without text).
  void add_request(const std::string& request_id, std::vector<std::int32_t> prompt,
                   const SamplingParams& params);
  // Stops the request and frees its blocks; false if it is unknown or already done.
  bool abort_request(const std::string& request_id);

  // One step. Returns the output of every request that advanced or finished, per its
  // output_kind. Throws minivllm::Error when the step failed (its requests are closed).
  std::vector<RequestOutput> step();
  // Steps until no request is left; returns the final outputs in the order requests finished.
  std::vector<RequestOutput> run_until_done();

  bool has_unfinished_requests() const { return table_.num_open() != 0; }
  const Scheduler& scheduler() const { return core_.scheduler(); }
  std::uint64_t num_steps() const { return core_.num_steps(); }
  const EngineCounters& counters() const { return table_.counters(); }

 private:
  // Collects one step's events.
  struct StepEvents final : RequestEvents, StepAnswers {
    std::vector<std::string> advanced;  // request ids, each once, in the order they advanced
    std::unordered_map<std::string, std::vector<RequestDelta>> deltas;
    std::unordered_map<std::string, RequestOutput> answered_outputs;
    std::vector<std::pair<std::string, std::string>> errors;  // request id, error
    std::deque<StepResult> results;
    std::deque<StepFailed> failures;

    void delta(RequestDelta&& delta) override;
    void answered(RequestOutput&& output) override;
    void failed(const std::string& request_id, const std::string& error, bool refused) override;
    void result(StepResult&& result) override { results.push_back(std::move(result)); }
    void failed(StepFailed&& failure) override { failures.push_back(std::move(failure)); }
  };
  // What the request's outputs so far carried.
  struct Reported {
    OutputKind kind = OutputKind::cumulative;
    bool prompt = false;
  };

  std::optional<RequestOutput> output_of(const std::string& id, Reported& reported);

  TextStreams text_;
  EngineCore core_;
  StepExecutor executor_;
  RequestTable table_;
  std::unordered_map<std::string, Reported> reported_;
  StepEvents events_;
};

}  // namespace minivllm
