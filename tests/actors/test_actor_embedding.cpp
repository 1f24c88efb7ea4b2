// The embedding API on the tiny Qwen3 model: the runtime's actors spawned in the test's own
// actor system, driven with typed messages. Streaming deltas, bad requests, abort, a requester
// that goes away, and shutdown.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>

#include "actors/runtime_spec.hpp"

#include "actor_test_support.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;

// No test waits longer than this for an answer (a hang fails instead of stalling the run). Ample
// for the slowest request under ThreadSanitizer (~75 s for the six streamed completions).
constexpr auto kTimeout = 180s;

// Every delta a sink actor received, by (request id, completion index).
struct Deltas {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<std::string, int>, std::vector<RequestDelta>> by_completion;
  int num_finished = 0;

  bool wait_finished(int n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 30s, [&] { return num_finished >= n; });
  }
  bool wait_any() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 30s, [&] { return !by_completion.empty(); });
  }
};

delta_sink spawn_sink_actor(caf::actor_system& sys, std::shared_ptr<Deltas> deltas) {
  // `deltas` is a spawn argument, not a capture: CAF 0.17 spawns a function without arguments
  // through a null pointer (UBSan reports it in CAF's headers).
  return sys.spawn(
      [](delta_sink::pointer, std::shared_ptr<Deltas> deltas) -> delta_sink::behavior_type {
        return {[deltas](RequestDelta& d) {
          std::lock_guard lock(deltas->mutex);
          if (d.finished) ++deltas->num_finished;
          deltas->by_completion[{d.request_id, d.index}].push_back(std::move(d));
          deltas->changed.notify_all();
        }};
      },
      std::move(deltas));
}

// Whether `text` is whole UTF-8 characters (no lead byte without its continuation bytes).
bool whole_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > text.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}

caf::actor_system_config& runtime_config(caf::actor_system_config& cfg) {
  add_runtime_types(cfg);
  return cfg;
}

class Embedding : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = spawn_runtime(sys_, runtime_spec(testing::tiny_config("tiny-qwen3", {"model.max_model_len=1024"})));
  }
  void TearDown() override {
    caf::anon_send(engine_, shutdown_atom_v);
    // The system waits for every actor when it ends, the test's own sinks included.
    for (const delta_sink& sink : sinks_) caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  }

  delta_sink spawn_sink(std::shared_ptr<Deltas> deltas) {
    return sinks_.emplace_back(spawn_sink_actor(sys_, std::move(deltas)));
  }

  // Sends every request at once; one result each, in order: the output or the error's text.
  struct Result {
    RequestOutput output;
    std::string error;
  };
  std::vector<Result> submit_all(std::vector<GenerateRequest> requests, const delta_sink& sink = {}) {
    caf::scoped_actor self{sys_};
    using handle = decltype(self->request(engine_, kTimeout, GenerateRequest{}, sink));
    std::vector<handle> pending;
    for (GenerateRequest& r : requests) pending.push_back(self->request(engine_, kTimeout, std::move(r), sink));
    std::vector<Result> results(pending.size());
    for (std::size_t i = 0; i < pending.size(); ++i)
      pending[i].receive([&](RequestOutput& out) { results[i].output = std::move(out); },
                         [&](caf::error& err) { results[i].error = error_text(sys_, err); });
    return results;
  }

  EngineStats stats() {
    caf::scoped_actor self{sys_};
    EngineStats s;
    self->request(engine_, kTimeout, stats_atom_v)
        .receive([&](EngineStats& x) { s = std::move(x); }, [&](caf::error& err) { ADD_FAILURE() << error_text(sys_, err); });
    return s;
  }

  // Waits (up to ~2 s: far less than the long requests would run) until nothing runs or
  // waits; then the pool must be whole.
  void expect_idle_and_whole() {
    EngineStats s;
    for (int i = 0; i < 40; ++i) {
      s = stats();
      if (s.num_running + s.num_waiting == 0) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(s.num_running + s.num_waiting, 0u);
    EXPECT_EQ(s.num_free_blocks, s.num_blocks);
    EXPECT_EQ(s.invariant_violation, "");
  }

  static GenerateRequest long_request(const std::string& text) {
    GenerateRequest r;
    r.prompt = text;
    r.params.max_tokens = 1000;
    r.params.ignore_eos = true;
    return r;
  }

  caf::actor_system_config cfg_;
  caf::actor_system sys_{runtime_config(cfg_)};
  engine_actor engine_;
  std::vector<delta_sink> sinks_;
};

TEST_F(Embedding, GreedyGoldensWithDeltasThatAddUpToTheOutputs) {
  const auto goldens = testing::load_goldens("tiny-qwen3");
  std::vector<GenerateRequest> requests;
  for (const auto& g : goldens) {
    GenerateRequest& r = requests.emplace_back();
    r.prompt_token_ids = g.prompt;
    r.params.temperature = 0.0;
    r.params.max_tokens = testing::kGoldenNewTokens;
    r.params.ignore_eos = true;
  }
  auto deltas = std::make_shared<Deltas>();
  const auto results = submit_all(std::move(requests), spawn_sink(deltas));
  ASSERT_TRUE(deltas->wait_finished(static_cast<int>(goldens.size())));
  std::lock_guard lock(deltas->mutex);
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_EQ(results[i].error, "");
    const RequestOutput& out = results[i].output;
    const CompletionOutput& c = out.outputs.at(0);
    EXPECT_EQ(testing::head(c.token_ids, goldens[i].expected.size()), goldens[i].expected) << i;
    std::vector<std::int32_t> streamed_ids;
    std::string streamed_text;
    for (const RequestDelta& d : deltas->by_completion.at({out.request_id, 0})) {
      streamed_ids.insert(streamed_ids.end(), d.token_ids.begin(), d.token_ids.end());
      streamed_text += d.text;
    }
    EXPECT_EQ(streamed_ids, c.token_ids);
    EXPECT_EQ(streamed_text, c.text);
  }
}

TEST_F(Embedding, AFinalOnlyRequestStreamsNothingToItsSink) {
  std::vector<GenerateRequest> requests(2);
  requests[0].prompt = "final only";
  requests[0].params.max_tokens = 4;
  requests[0].params.ignore_eos = true;
  requests[0].params.output_kind = OutputKind::final_only;
  requests[1].prompt = "streams";  // longer: its last delta comes after any of the first's
  requests[1].params.max_tokens = 12;
  requests[1].params.ignore_eos = true;
  auto deltas = std::make_shared<Deltas>();
  const auto results = submit_all(std::move(requests), spawn_sink(deltas));
  ASSERT_TRUE(deltas->wait_finished(1));
  std::lock_guard lock(deltas->mutex);
  ASSERT_EQ(results[0].error, "");
  EXPECT_EQ(results[0].output.outputs.at(0).token_ids.size(), 4u);
  EXPECT_EQ(deltas->by_completion.count({results[0].output.request_id, 0}), 0u);
  EXPECT_EQ(deltas->by_completion.at({results[1].output.request_id, 0}).size(), 12u);
}

TEST_F(Embedding, SampledTextStreamsWithoutSplittingCharacters) {
  std::vector<GenerateRequest> requests;
  for (const char* text : {"日本語の文章を書いてください。", "Write a poem 🙂 about the sea", "Привет, мир"}) {
    GenerateRequest& r = requests.emplace_back();
    r.prompt = text;
    r.params.n = 2;
    r.params.seed = 7;
    r.params.max_tokens = 64;
    r.params.ignore_eos = true;
  }
  auto deltas = std::make_shared<Deltas>();
  const auto results = submit_all(std::move(requests), spawn_sink(deltas));
  ASSERT_TRUE(deltas->wait_finished(6));
  std::lock_guard lock(deltas->mutex);
  std::size_t multibyte_deltas = 0;
  for (const auto& r : results) {
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.output.outputs.size(), 2u);
    for (const CompletionOutput& c : r.output.outputs) {
      EXPECT_EQ(c.token_ids.size(), 64u);
      std::string streamed;
      for (const RequestDelta& d : deltas->by_completion.at({r.output.request_id, c.index})) {
        EXPECT_TRUE(whole_utf8(d.text)) << "a delta splits a character: " << d.text;
        multibyte_deltas += d.text.find_first_of("\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
                                                 "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
                                                 "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf"
                                                 "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf") != std::string::npos;
        streamed += d.text;
      }
      EXPECT_EQ(streamed, c.text);
    }
  }
  EXPECT_GT(multibyte_deltas, 0u) << "no multi-byte text was streamed: the test proves nothing";
}

TEST_F(Embedding, BadRequestsFailClearlyWhileTheOthersComplete) {
  auto good = [] {
    GenerateRequest r;
    r.prompt = "Hello there";
    r.params.max_tokens = 8;
    r.params.ignore_eos = true;
    return r;
  };
  std::vector<GenerateRequest> requests;
  requests.push_back(good());
  GenerateRequest& empty = requests.emplace_back(good());
  empty.prompt = "";
  GenerateRequest& too_long = requests.emplace_back(good());
  too_long.prompt_token_ids.assign(1100, 11);
  requests.push_back(good());
  GenerateRequest& negative = requests.emplace_back(good());
  negative.params.max_tokens = -1;
  GenerateRequest& top_p_zero = requests.emplace_back(good());
  top_p_zero.params.top_p = 0.0;
  GenerateRequest& top_p_big = requests.emplace_back(good());
  top_p_big.params.top_p = 1.5;
  GenerateRequest& bad_id = requests.emplace_back(good());
  bad_id.prompt_token_ids = {1, 2, 1000000};
  requests.push_back(good());

  const auto results = submit_all(std::move(requests));
  const std::map<std::size_t, std::string> expected_error = {
      {1, "empty"}, {2, "max_model_len"}, {4, "max_tokens"}, {5, "top_p"}, {6, "top_p"}, {7, "1000000"}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    if (const auto it = expected_error.find(i); it != expected_error.end()) {
      EXPECT_NE(results[i].error.find(it->second), std::string::npos) << results[i].error;
    } else {
      EXPECT_EQ(results[i].error, "");
      EXPECT_EQ(results[i].output.outputs.at(0).token_ids.size(), 8u);
    }
  }
  expect_idle_and_whole();
}

// The prefix cache's hit reaches the output: a prompt whose first 96 tokens (6 blocks of 16)
// an earlier request computed; the counters add both requests up.
TEST_F(Embedding, ThePrefixCacheHitAndTheRequestCountersAreReported) {
  GenerateRequest first;
  for (int i = 0; i < 100; ++i) first.prompt_token_ids.push_back(100 + i);
  first.params.max_tokens = 4;
  GenerateRequest second = first;
  for (std::int32_t t : {3, 1, 4, 1, 5}) second.prompt_token_ids.push_back(t);
  const std::vector<Result> a = submit_all({first});
  ASSERT_EQ(a.at(0).error, "");
  EXPECT_EQ(a[0].output.num_cached_tokens, 0);
  const std::vector<Result> b = submit_all({second});
  ASSERT_EQ(b.at(0).error, "");
  EXPECT_EQ(b[0].output.num_cached_tokens, 96);
  expect_idle_and_whole();

  // The two requests in the counters.
  const EngineCounters c = stats().counters;
  EXPECT_EQ(c.prompt_tokens, 205u);
  EXPECT_EQ(c.generation_tokens, 8u);
  EXPECT_EQ(c.prefix_cache_queries, 205u);
  EXPECT_EQ(c.prefix_cache_hits, 96u);
  EXPECT_EQ(c.finished_length, 2u);
  EXPECT_EQ(c.finished_stop + c.finished_abort + c.finished_error, 0u);
  EXPECT_EQ(c.time_to_first_token.count, 2u);
  EXPECT_EQ(c.inter_token_latency.count, 6u);  // 3 gaps each
  EXPECT_EQ(c.e2e_request_latency.count, 2u);
  EXPECT_EQ(c.request_queue_time.count, 2u);
  for (const Histogram* h : {&c.time_to_first_token, &c.inter_token_latency,
                             &c.e2e_request_latency, &c.request_queue_time}) {
    std::uint64_t total = 0;
    for (std::uint64_t n : h->counts) total += n;
    EXPECT_EQ(total, h->count);
    EXPECT_EQ(h->counts.size(), h->bounds.size() + 1);
    EXPECT_GE(h->sum, 0.0);
  }
  EXPECT_LE(c.e2e_request_latency.sum, 60.0);
}

TEST_F(Embedding, AbortEndsTheRequestAndFreesItsBlocks) {
  auto deltas = std::make_shared<Deltas>();
  caf::scoped_actor self{sys_};
  auto pending = self->request(engine_, kTimeout, long_request("Tell me a long story"),
                               spawn_sink(deltas));
  ASSERT_TRUE(deltas->wait_any());
  std::string id;
  {
    std::lock_guard lock(deltas->mutex);
    id = deltas->by_completion.begin()->first.first;
  }
  bool aborted = false;
  self->request(engine_, kTimeout, abort_atom_v, id).receive([&](bool ok) { aborted = ok; },
                                                                  [&](caf::error&) {});
  EXPECT_TRUE(aborted);
  pending.receive(
      [&](RequestOutput& out) {
        EXPECT_EQ(out.outputs.at(0).finish_reason, FinishReason::abort);
        EXPECT_LT(out.outputs.at(0).token_ids.size(), 1000u);
      },
      [&](caf::error& err) { ADD_FAILURE() << error_text(sys_, err); });
  expect_idle_and_whole();
}

TEST_F(Embedding, ARequesterThatGoesAwayHasItsRequestsAborted) {
  {
    caf::scoped_actor requester{sys_};
    for (int i = 0; i < 3; ++i) requester->send(engine_, long_request("Count to a million"), delta_sink{});
    EXPECT_GT(stats().num_running + stats().num_waiting, 0u);
  }
  expect_idle_and_whole();
}

// Every request is answered, and every streamed completion ends with a finished delta (the
// server ends its streams on them).
TEST_F(Embedding, ShutdownAnswersEveryRequestAndEndsEveryStream) {
  auto deltas = std::make_shared<Deltas>();
  const delta_sink sink = spawn_sink(deltas);
  caf::scoped_actor self{sys_};
  using handle = decltype(self->request(engine_, kTimeout, GenerateRequest{}, delta_sink{}));
  std::vector<handle> pending;
  for (int i = 0; i < 4; ++i)
    pending.push_back(self->request(engine_, kTimeout, long_request("Go on and on"), i % 2 ? sink : delta_sink{}));
  stats();  // the requests are in
  self->send(engine_, shutdown_atom_v);
  for (auto& p : pending)
    p.receive([&](RequestOutput& out) { EXPECT_EQ(out.outputs.at(0).finish_reason, FinishReason::abort); },
              [&](caf::error& err) { ADD_FAILURE() << error_text(sys_, err); });
  EXPECT_TRUE(deltas->wait_finished(2));
  std::lock_guard lock(deltas->mutex);
  EXPECT_EQ(deltas->num_finished, 2);
}

}  // namespace
}  // namespace minivllm
