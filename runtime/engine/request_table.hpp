#pragma once
// The requests side of the engine: every open request, from validation to its answer. It builds
// the prompt (chat template, text or ids), checks the request, numbers its completions'
// sequences for the core (SeqRequest), then applies the core's StepOutputs: tokens, logprobs,
// prompt logprobs, cached prompt tokens, finish reasons, streamed text. It keeps the request
// counters (EngineCounters). Plain C++ and single-threaded: the engine actor drives it from
// messages, the synchronous LLMEngine from a loop.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <minivllm/engine_counters.hpp>
#include <minivllm/request.hpp>
#include "engine/step_messages.hpp"
#include "engine/text_stream.hpp"

namespace minivllm {

class Tokenizer;

// What applying outputs tells the door that owns the requests.
class RequestEvents {
 public:
  // Completion `delta.index` of a request that streams advanced (or finished).
  virtual void delta(RequestDelta&& delta) = 0;
  // A request is done: its final output. It is closed now.
  virtual void answered(RequestOutput&& output) = 0;
  // A request failed (a step failed), or the core refused it (`refused`: for what it asked; the
  // error then names the request): it is closed now.
  virtual void failed(const std::string& request_id, const std::string& error, bool refused) = 0;

 protected:
  ~RequestEvents() = default;
};

class RequestTable {
 public:
  // Without a tokenizer, requests need token-id prompts; without a chat renderer, they have no
  // messages; without text streams, outputs carry no text (and the core refuses stop strings).
  // `defaults` fill the sampling fields a request leaves unset (the model's generation_config).
  RequestTable(std::shared_ptr<const Tokenizer> tokenizer, ChatRenderer chat,
               TextStreams text_streams, std::int32_t vocab_size,
               SamplingDefaults defaults = {});
  ~RequestTable();

  // Builds and checks the prompt and the parameters, names the request when it has no id, and
  // opens it: returns what the core queues. Throws minivllm::Error ("request ID: why").
  // `streams`: its deltas go to RequestEvents::delta as it advances.
  SeqRequest open(GenerateRequest& request, bool streams);
  // The prompt's token ids (messages in the chat format, text through the tokenizer); throws
  // minivllm::Error when the request has no prompt this table can make.
  std::vector<std::int32_t> prompt_of(const GenerateRequest& request) const;
  // A request the core refused: closed with `error`.
  void refuse(const std::string& request_id, const std::string& error, RequestEvents& events);

  void apply(StepOutputs& outputs, RequestEvents& events);
  // Answers every open request with what it has so far, finish_reason abort.
  void abort_all(RequestEvents& events);

  bool is_open(const std::string& request_id) const;
  std::size_t num_open() const { return requests_.size(); }
  // The request's output so far (cumulative); null when it is not open.
  const RequestOutput* output(const std::string& request_id) const;
  std::vector<std::string> open_ids() const;
  const EngineCounters& counters() const { return counters_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Open {
    RequestOutput output;
    // One per completion while its text streams; requests with stop strings get their text from
    // the core's stop check at the end, since a stop string can cut text already decoded.
    std::vector<std::unique_ptr<TextStream>> text;
    int num_unfinished = 0;
    bool streams = false;
    std::uint64_t first_seq_id = 0;  // completion i is sequence first_seq_id + i
    Clock::time_point arrival;
    std::vector<Clock::time_point> last_token;  // per completion: when its newest token came
  };

  void apply(Open& r, std::size_t index, std::int32_t token, SeqUpdate* update,
             RequestEvents& events);
  void close(Open& r, FinishReason reason, bool error);

  std::shared_ptr<const Tokenizer> tokenizer_;
  ChatRenderer chat_;
  SamplingDefaults defaults_;
  TextStreams text_streams_;
  std::int32_t vocab_size_;
  std::unordered_map<std::string, Open> requests_;
  std::unordered_map<std::uint64_t, Open*> by_seq_;  // each sequence's request, while it runs
  std::uint64_t next_id_ = 0;
  std::uint64_t next_seq_id_ = 0;
  EngineCounters counters_;
  Clock::time_point now_;  // of the outputs being applied
};

}  // namespace minivllm
