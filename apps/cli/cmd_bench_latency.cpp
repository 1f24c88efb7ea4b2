// minivllm bench latency: streams requests through the engine actor at each concurrency level
// (that many requests in flight, a new one as soon as one ends) and reports, from the client's
// side, time to first token (TTFT: request sent -> first token's delta), time per output token
// (TPOT: a request's decode time over its tokens after the first), the inter-token gaps (ITL)
// and end-to-end time: p50, p90, p99, mean. Prompts are random token ids (seeded, a different
// one per request, so the prefix cache does not help); outputs ignore EOS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/actors/runtime.hpp>

#include "actors/runtime_spec.hpp"
#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

#include "cli/bench_report.hpp"
#include "cli/commands.hpp"
#include "cli/config_options.hpp"
#include "cli/latency_stats.hpp"
#include "cli/step_times_report.hpp"

namespace minivllm::cli {
namespace {

struct LatencyOptions {
  ConfigOptions config;
  std::vector<int> concurrency = {1, 8, 64};
  int prompt_len = 128;
  int max_tokens = 1024;
  int num_requests = 0;  // per level; 0: concurrency x 4, at least 8
  double temperature = 0.0;
  std::uint64_t seed = 0;
  std::string output = "bench-latency.json";
};

struct LevelRun {
  std::vector<RequestTimes> requests;
  Clock::time_point start;
  Clock::time_point end;
};

// Keeps `concurrency` of `requests` in flight until all are answered, timing every delta, then
// fulfils `finished` and quits.
caf::behavior level_driver(caf::event_based_actor* self, engine_actor engine,
                           std::vector<GenerateRequest> requests, int concurrency,
                           std::shared_ptr<LevelRun> run,
                           std::shared_ptr<std::promise<void>> finished) {
  struct Progress {
    std::size_t next = 0;
    std::size_t answered = 0;
    std::unordered_map<std::string, std::size_t> index;  // request id -> position
  };
  auto progress = std::make_shared<Progress>();
  run->requests.resize(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i)
    progress->index.emplace(requests[i].request_id, i);
  auto reqs = std::make_shared<std::vector<GenerateRequest>>(std::move(requests));
  const auto sink = caf::actor_cast<delta_sink>(self);
  auto send_next = std::make_shared<std::function<void()>>();
  *send_next = [=] {
    const std::size_t i = progress->next++;
    auto on_answer = [=](std::string error) {
      run->requests[i].done = Clock::now();
      run->requests[i].error = std::move(error);
      if (progress->next < reqs->size()) (*send_next)();
      if (++progress->answered == reqs->size()) {
        run->end = Clock::now();
        finished->set_value();
        *send_next = nullptr;  // it holds itself
        self->quit();
      }
    };
    run->requests[i].sent = Clock::now();
    self->request(engine, caf::infinite, (*reqs)[i], sink)
        .then([=](const RequestOutput&) { on_answer(""); },
              [=](const caf::error& err) { on_answer(error_text(self->system(), err)); });
  };
  run->start = Clock::now();
  const std::size_t first = std::min(reqs->size(), static_cast<std::size_t>(concurrency));
  for (std::size_t i = 0; i < first; ++i) (*send_next)();
  return {
      [=](const RequestDelta& delta) {
        const auto now = Clock::now();
        auto& tokens = run->requests.at(progress->index.at(delta.request_id)).tokens;
        tokens.insert(tokens.end(), delta.token_ids.size(), now);
      },
  };
}

// Sends the runtime its shutdown when destroyed.
struct RuntimeShutdown {
  engine_actor engine;
  ~RuntimeShutdown() { caf::anon_send(engine, shutdown_atom_v); }
};

// `count` requests of `prompt_len` random token ids each, named bench-<level>-<i>.
std::vector<GenerateRequest> make_requests(const LatencyOptions& o, std::size_t count, int level,
                                           std::int64_t vocab_size, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(vocab_size - 1));
  std::vector<GenerateRequest> requests(count);
  for (std::size_t i = 0; i < count; ++i) {
    GenerateRequest& r = requests[i];
    r.request_id = "bench-" + std::to_string(level) + "-" + std::to_string(i);
    r.prompt_token_ids.resize(static_cast<std::size_t>(o.prompt_len));
    for (std::int32_t& id : r.prompt_token_ids) id = token(rng);
    r.params.max_tokens = o.max_tokens;
    r.params.ignore_eos = true;
    r.params.temperature = o.temperature;
  }
  return requests;
}

LevelRun run_level(caf::actor_system& sys, const engine_actor& engine,
                   std::vector<GenerateRequest> requests, int concurrency) {
  auto run = std::make_shared<LevelRun>();
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  sys.spawn(level_driver, engine, std::move(requests), concurrency, run, finished);
  done.wait();
  return std::move(*run);
}

void print_level(const LatencyResult& r, int concurrency, const LatencyOptions& o) {
  std::printf("concurrency %d: %zu requests (%d prompt tokens, %d output tokens each) in %.3f s, "
              "%.1f output tok/s\n",
              concurrency, r.num_requests, o.prompt_len, o.max_tokens, r.seconds,
              static_cast<double>(r.output_tokens) / r.seconds);
  print_latency_table(r);
}

LatencyResult measure(const LevelRun& run) { return measure(run.requests, run.start, run.end); }

void check(const LatencyOptions& o) {
  if (o.concurrency.empty()) throw Error("--concurrency: give at least one level");
  for (int c : o.concurrency)
    if (c < 1) throw Error("--concurrency: each level must be >= 1, got " + std::to_string(c));
  if (o.prompt_len < 1) throw Error("--prompt-len must be >= 1");
  if (o.max_tokens < 1) throw Error("--max-tokens must be >= 1");
  if (o.num_requests < 0)
    throw Error("--num-requests must be >= 0 (0: concurrency x 4, at least 8)");
}

void run_latency(const LatencyOptions& o) {
  check(o);
  const Config config = o.config.load();
  RuntimeSpec spec = runtime_spec(config);
  const std::int64_t vocab_size = load_model_config(config.model.path / "config.json").vocab_size;
  caf::actor_system_config cfg;
  add_runtime_types(cfg);
  set_low_latency_scheduling(cfg);
  caf::actor_system sys{cfg};
  const engine_actor engine = spawn_runtime(sys, std::move(spec));
  // The actor system's destructor waits for every actor: the runtime must be told to stop on
  // every way out of here, a failed request's exception included.
  const RuntimeShutdown shutdown{engine};
  std::mt19937_64 rng(o.seed);
  const auto start = std::chrono::steady_clock::now();
  // One short request first: a device's first step pays for set-up that no level should.
  LatencyOptions warm_up = o;
  warm_up.max_tokens = std::min(o.max_tokens, 4);
  measure(run_level(sys, engine, make_requests(warm_up, 1, 0, vocab_size, rng), 1));

  nlohmann::json levels = nlohmann::json::array();
  for (int concurrency : o.concurrency) {
    const std::size_t count = o.num_requests > 0
                                  ? static_cast<std::size_t>(o.num_requests)
                                  : static_cast<std::size_t>(std::max(8, concurrency * 4));
    const LevelRun run =
        run_level(sys, engine, make_requests(o, count, concurrency, vocab_size, rng), concurrency);
    const LatencyResult r = measure(run);
    print_level(r, concurrency, o);
    nlohmann::json level = {{"concurrency", concurrency}};
    level.update(latency_json(r));
    levels.push_back(std::move(level));
  }
  // Where the engine's time went over the whole run (the warm-up request too): with one level of
  // one-token requests, what a prefill step costs the worker and the scheduler against TTFT.
  const StepTimes times = engine_stats(sys, engine).step_times;
  print_step_times(times,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  nlohmann::json result = bench_run_info(config);
  result.update({{"bench", "latency"},
                 {"settings",
                  {{"concurrency", o.concurrency},
                   {"prompt_len", o.prompt_len},
                   {"max_tokens", o.max_tokens},
                   {"num_requests", o.num_requests > 0
                                        ? nlohmann::json(o.num_requests)
                                        : nlohmann::json("concurrency x 4, at least 8")},
                   {"temperature", o.temperature},
                   {"ignore_eos", true},
                   {"seed", o.seed}}},
                 {"levels", levels},
                 {"step_times", step_times_json(times)}});
  write_bench_json(result, o.output, "--output");
}

}  // namespace

void add_bench_latency_command(CLI::App& bench) {
  auto o = std::make_shared<LatencyOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "latency", "Streaming latency (TTFT, TPOT, inter-token) at several concurrency levels");
  o->config.add_to(*cmd);
  cmd->add_option("--concurrency", o->concurrency, "Requests in flight, per level: e.g. 1,8,64")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prompt-len", o->prompt_len, "Prompt tokens per request (random ids)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "Output tokens per request (EOS ignored)")
      ->capture_default_str();
  cmd->add_option("--num-requests", o->num_requests,
                  "Requests per level; 0: concurrency x 4, at least 8")
      ->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the random prompts")->capture_default_str();
  cmd->add_option("--output", o->output, "Where to write the result JSON")->capture_default_str();
  cmd->callback([o] { run_latency(*o); });
}

}  // namespace minivllm::cli
