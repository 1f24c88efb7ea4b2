// minivllm bench serve: sends a workload file's requests to a running `minivllm serve` over
// HTTP (POST /v1/completions, streamed), all at once or with Poisson arrivals at a rate, at most
// --max-concurrency in flight, and reports what vLLM's `bench serve` reports: request throughput,
// output tok/s, and TTFT, TPOT, ITL and end-to-end percentiles, from the client's side. Each
// streamed chunk before the finish is one token's arrival (the server sends one per step).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "cli/bench_report.hpp"
#include "cli/commands.hpp"
#include "cli/latency_stats.hpp"
#include "cli/sse_client.hpp"
#include "cli/workload.hpp"

namespace minivllm::cli {
namespace {

struct ServeBenchOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string workload;
  std::string request_rate = "inf";  // requests per second, or inf: all at once
  int max_concurrency = 0;           // 0: no limit
  std::uint64_t seed = 0;
  std::string api_key;
  std::string output = "bench-serve.json";
};

double parse_rate(const std::string& text) {
  if (text == "inf") return INFINITY;
  try {
    std::size_t used = 0;
    const double r = std::stod(text, &used);
    if (used == text.size() && r > 0 && std::isfinite(r)) return r;
  } catch (const std::exception&) {
  }
  throw Error("--request-rate " + text + ": expected a positive number of requests/s, or inf");
}

std::string served_model(const HttpTarget& target, const std::string& api_key) {
  const HttpAnswer a = http_get(target, "/v1/models", api_key);
  if (a.status != 200) throw Error("GET /v1/models: status " + std::to_string(a.status) + ": " + a.body);
  return nlohmann::json::parse(a.body).at("data").at(0).at("id").get<std::string>();
}

std::string request_body(const GenerateRequest& r, const std::string& model) {
  return nlohmann::json{{"model", model},
                        {"prompt", r.prompt_token_ids},
                        {"max_tokens", r.params.max_tokens},
                        {"temperature", r.params.temperature_value()},
                        {"ignore_eos", r.params.ignore_eos},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}}
      .dump();
}

// One request, timed: each token chunk's arrival; the usage's token count must agree.
void run_one(const HttpTarget& target, const std::string& api_key, const std::string& body,
             RequestTimes& t) {
  t.sent = Clock::now();
  std::int64_t completion_tokens = -1;
  try {
    const HttpAnswer a = http_post_events(target, "/v1/completions", body, api_key, [&](std::string_view data) {
      if (data == "[DONE]") return;
      const nlohmann::json chunk = nlohmann::json::parse(data);
      if (chunk.contains("error")) {
        t.error = chunk["error"].value("message", "an error event");
        return;
      }
      if (chunk.contains("usage") && chunk["usage"].is_object())
        completion_tokens = chunk["usage"].value("completion_tokens", std::int64_t{-1});
      for (const auto& choice : chunk.at("choices"))
        if (choice.at("finish_reason").is_null()) t.tokens.push_back(Clock::now());
    });
    if (a.status != 200) t.error = "status " + std::to_string(a.status) + ": " + a.body;
  } catch (const std::exception& e) {
    t.error = e.what();
  }
  t.done = Clock::now();
  if (t.error.empty() && completion_tokens != static_cast<std::int64_t>(t.tokens.size()))
    t.error = "the stream had " + std::to_string(t.tokens.size()) + " token chunks, its usage says " +
              std::to_string(completion_tokens) + " tokens";
}

void run_serve_bench(const ServeBenchOptions& o) {
  const HttpTarget target = parse_base_url(o.base_url);
  const double rate = parse_rate(o.request_rate);
  if (o.max_concurrency < 0) throw Error("--max-concurrency must be >= 0 (0: no limit)");
  const Workload w = read_workload(o.workload);
  const std::string model = served_model(target, o.api_key);
  std::vector<std::string> bodies;
  for (const GenerateRequest& r : w.requests) bodies.push_back(request_body(r, model));

  // One short request first, as `bench latency` does: a device's first step pays for set-up.
  {
    GenerateRequest warm = w.requests.at(0);
    warm.params.max_tokens = 4;
    RequestTimes t;
    run_one(target, o.api_key, request_body(warm, model), t);
    if (!t.error.empty()) throw Error("the warm-up request failed: " + t.error);
  }

  const std::ptrdiff_t slots = o.max_concurrency > 0 ? o.max_concurrency : static_cast<std::ptrdiff_t>(bodies.size());
  std::counting_semaphore<> in_flight(slots);
  std::vector<RequestTimes> times(bodies.size());
  std::vector<std::thread> clients;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(std::isinf(rate) ? 1.0 : rate);
  const auto start = Clock::now();
  auto next_arrival = start;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!std::isinf(rate)) {
      std::this_thread::sleep_until(next_arrival);
      next_arrival += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
    }
    in_flight.acquire();
    clients.emplace_back([&, i] {
      run_one(target, o.api_key, bodies[i], times[i]);
      in_flight.release();
    });
  }
  for (std::thread& t : clients) t.join();
  const auto end = Clock::now();
  const LatencyResult r = measure(times, start, end);

  std::printf("bench serve %s: workload %s, %zu requests, request rate %s, max concurrency %s\n",
              o.base_url.c_str(), w.name.c_str(), r.num_requests, o.request_rate.c_str(),
              o.max_concurrency > 0 ? std::to_string(o.max_concurrency).c_str() : "unlimited");
  std::printf("duration %.3f s\nrequests/s %.3f\noutput tok/s %.1f\ntotal tok/s %.1f\n", r.seconds,
              static_cast<double>(r.num_requests) / r.seconds,
              static_cast<double>(r.output_tokens) / r.seconds,
              static_cast<double>(r.output_tokens + w.prompt_tokens) / r.seconds);
  print_latency_table(r);

  nlohmann::json result = bench_run_info();
  result.update(latency_json(r));
  const HttpAnswer version = http_get(target, "/version", o.api_key);
  result.update({{"bench", "serve"},
                 {"server", {{"base_url", o.base_url}, {"model", model},
                             {"version", version.status == 200 ? nlohmann::json::parse(version.body)
                                                               : nlohmann::json(nullptr)}}},
                 {"workload", w.name},
                 {"workload_file", o.workload},
                 {"prompt_tokens", w.prompt_tokens},
                 {"requests_per_s", static_cast<double>(r.num_requests) / r.seconds},
                 {"total_tokens_per_s", static_cast<double>(r.output_tokens + w.prompt_tokens) / r.seconds},
                 {"settings", {{"request_rate", o.request_rate},
                               {"max_concurrency", o.max_concurrency},
                               {"seed", o.seed}}}});
  write_bench_json(result, o.output, "--output");
}

}  // namespace

void add_bench_serve_command(CLI::App& bench) {
  auto o = std::make_shared<ServeBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "serve", "A workload through a running `minivllm serve` over HTTP (streamed): throughput "
               "and TTFT, TPOT, ITL, end-to-end percentiles");
  cmd->add_option("--base-url", o->base_url, "The server, http://HOST:PORT")->capture_default_str();
  cmd->add_option("--workload", o->workload, "Workload JSON (benchmarks/throughput-256.json)")
      ->required();
  cmd->add_option("--request-rate", o->request_rate,
                  "Poisson arrivals at this many requests/s, or inf: all at once")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "Requests in flight at most; 0: no limit")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the arrival times")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "Sent as Authorization: Bearer KEY");
  cmd->add_option("--output", o->output, "Where to write the result JSON")->capture_default_str();
  cmd->callback([o] { run_serve_bench(*o); });
}

}  // namespace minivllm::cli
