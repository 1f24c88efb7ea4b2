// minivllm bench throughput: runs a workload file (benchmarks/throughput-256.json's format)
// through the runtime and reports requests/s, output tok/s and total tok/s over the wall time
// from the first request queued to the last finished (start-up excluded), then where that time
// went (the engine's step times). `bench latency` lives in cmd_bench_latency.cpp.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>
#include <minivllm/llm.hpp>

#include "cli/bench_report.hpp"
#include "cli/commands.hpp"
#include "cli/progress_bar.hpp"
#include "cli/config_options.hpp"
#include "cli/step_times_report.hpp"
#include "cli/workload.hpp"

namespace minivllm::cli {
namespace {

struct BenchOptions {
  ConfigOptions config;
  std::string workload;
  std::string output = "bench-throughput.json";
};

void run_throughput(const BenchOptions& o) {
  Workload w = read_workload(o.workload);
  const Config config = o.config.load();
  const std::size_t num_requests = w.requests.size();
  LLM llm(config);
  const auto start = std::chrono::steady_clock::now();
  std::vector<GenerateResult> results;
  {
    ProgressBar bar("throughput", "requests");
    results = llm.generate(std::move(w.requests), [&](std::size_t done) {
      bar.update(done, num_requests);
    });
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::int64_t output_tokens = 0, cached_tokens = 0;
  for (const GenerateResult& r : results) {
    if (!r.ok()) throw Error("workload request failed: " + r.error);
    output_tokens += static_cast<std::int64_t>(r.output.outputs.at(0).token_ids.size());
    cached_tokens += r.output.num_cached_tokens;
  }
  const double prefix_cache_hit_rate =
      w.prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(w.prompt_tokens) : 0.0;
  const double requests_per_s = static_cast<double>(num_requests) / seconds;
  const double output_per_s = static_cast<double>(output_tokens) / seconds;
  const double total_per_s = static_cast<double>(output_tokens + w.prompt_tokens) / seconds;
  std::printf("workload %s: %zu requests, %lld prompt tokens, %lld output tokens in %.3f s\n",
              w.name.c_str(), num_requests, static_cast<long long>(w.prompt_tokens),
              static_cast<long long>(output_tokens), seconds);
  std::printf("requests/s %.3f\noutput tok/s %.1f\ntotal tok/s %.1f\n", requests_per_s,
              output_per_s, total_per_s);
  std::printf("prefix cache: %lld of %lld prompt tokens hit (%.1f %%)\n",
              static_cast<long long>(cached_tokens), static_cast<long long>(w.prompt_tokens),
              100.0 * prefix_cache_hit_rate);
  const StepTimes times = llm.stats().step_times;
  print_step_times(times, seconds);
  nlohmann::json result = bench_run_info(config);
  result.update({
      {"bench", "throughput"},
      {"workload", w.name},
      {"workload_file", o.workload},
      {"num_requests", num_requests},
      {"prompt_tokens", w.prompt_tokens},
      {"output_tokens", output_tokens},
      {"seconds", seconds},
      {"requests_per_s", requests_per_s},
      {"output_tokens_per_s", output_per_s},
      {"total_tokens_per_s", total_per_s},
      {"prefix_cache_hit_tokens", cached_tokens},
      {"prefix_cache_hit_rate", prefix_cache_hit_rate},
      {"step_times", step_times_json(times)},
  });
  write_bench_json(result, o.output, "--output");
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchOptions>();
  CLI::App* throughput = bench->add_subcommand("throughput", "Offline throughput of a workload file");
  o->config.add_to(*throughput);
  throughput->add_option("--workload", o->workload, "Workload JSON (benchmarks/throughput-256.json)")
      ->required();
  throughput->add_option("--output", o->output, "Where to write the result JSON")->capture_default_str();
  throughput->callback([o] { run_throughput(*o); });
  add_bench_latency_command(*bench);
  add_bench_serve_command(*bench);
}

}  // namespace minivllm::cli
