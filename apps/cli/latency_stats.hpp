#pragma once
// What a streaming client saw of its requests, summarised as `bench latency` and `bench serve`
// report it: TTFT (sent -> first token), TPOT (a request's decode time over its tokens after the
// first), ITL (every gap between tokens) and end-to-end time, as p50, p90, p99 and mean.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace minivllm::cli {

using Clock = std::chrono::steady_clock;

struct RequestTimes {
  Clock::time_point sent;
  std::vector<Clock::time_point> tokens;  // when each token arrived
  Clock::time_point done;
  std::string error;
};

struct Summary {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

// Percentiles by linear interpolation between the closest ranks.
Summary summarise(std::vector<double> values);

struct LatencyResult {
  std::size_t num_requests = 0;
  std::int64_t output_tokens = 0;
  double seconds = 0;              // first sent to last done
  Summary ttft, tpot, itl, e2e;    // milliseconds
};

// Throws minivllm::Error naming the first request that failed.
LatencyResult measure(const std::vector<RequestTimes>& requests, Clock::time_point start,
                      Clock::time_point end);

// The four rows (ms: p50, p90, p99, mean), indented under a caller's heading.
void print_latency_table(const LatencyResult& r);

// {"num_requests", "output_tokens", "seconds", "output_tokens_per_s", "ttft_ms", "tpot_ms",
//  "itl_ms", "e2e_ms"}, each summary {"p50", "p90", "p99", "mean", "count"} (null when empty).
nlohmann::json latency_json(const LatencyResult& r);

}  // namespace minivllm::cli
