#pragma once
// The step loop as plain code: schedule -> run the batch on the model runner -> sample ->
// update sequences and stop conditions. The engine actor distributes exactly this loop.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/engine_core.hpp"
#include "engine/model_runner.hpp"
#include "engine/request_output.hpp"
#include "engine/sampling_params.hpp"
#include "engine/scheduler.hpp"
#include "engine/sequence.hpp"
#include "engine/stop_conditions.hpp"

namespace minivllm {

class LLMEngine {
 public:
  // `runner` must outlive the engine. Without `detokenize` outputs carry no text and requests
  // with stop strings are refused.
  LLMEngine(const EngineConfig& config, ModelRunner& runner, Detokenizer detokenize = {});

  // Throws minivllm::Error for a bad request (duplicate id, bad token id, bad params, too long
  // for max_model_len, can never fit the cache, stop strings without a detokenizer).
  void add_request(const std::string& request_id, std::vector<std::int32_t> prompt,
                   const SamplingParams& params);
  // Stops the request and frees its blocks; false if it is unknown or already done.
  bool abort_request(const std::string& request_id);

  // One step. Returns the (cumulative) output of every request that advanced or finished.
  std::vector<RequestOutput> step();
  // Steps until no request is left; returns the final outputs in the order requests finished.
  std::vector<RequestOutput> run_until_done();

  bool has_unfinished_requests() const { return !requests_.empty(); }
  const Scheduler& scheduler() const { return scheduler_; }
  std::uint64_t num_steps() const { return num_steps_; }

 private:
  // How much of a completion earlier outputs carried (OutputKind::delta).
  struct Reported {
    std::size_t tokens = 0;
    std::size_t text = 0;
  };
  struct Request {
    std::vector<std::int32_t> prompt;
    std::vector<std::unique_ptr<Sequence>> seqs;  // one per completion
    std::vector<Reported> reported;               // one per completion
    bool prompt_reported = false;
  };

  void record_prompt_logprobs(Sequence& seq, const ScheduledSequence& s, const float* rows);
  // The request's output now, per its OutputKind; none when final_only and not finished.
  std::optional<RequestOutput> output_of(const std::string& id, Request& request) const;

  EngineConfig config_;
  ModelRunner& runner_;
  Detokenizer detokenize_;
  Scheduler scheduler_;
  std::unordered_map<std::string, Request> requests_;
  std::mt19937_64 seed_source_;
  SeqId next_seq_id_ = 0;
  std::uint64_t num_steps_ = 0;
  Batch batch_;  // reused every step
};

}  // namespace minivllm
