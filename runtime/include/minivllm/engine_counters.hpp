#pragma once
// What an engine has done since it started, for logs and a metrics endpoint: tokens, the prefix
// cache's queries and hits, requests finished by reason, and request latency histograms with
// vLLM's bucket boundaries (so dashboards built for vLLM read them as they are).
#include <cstdint>
#include <vector>

#include <minivllm/request_output.hpp>

namespace minivllm {

// A Prometheus-style histogram: counts per bucket of upper bounds `bounds` (ascending, "le"),
// the last bucket (+Inf) implied; the sum and count of what it observed.
struct Histogram {
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;  // bounds.size() + 1, not cumulative
  double sum = 0;
  std::uint64_t count = 0;

  static Histogram with_bounds(std::vector<double> bounds);
  void observe(double value);
};

// vLLM's boundaries, in seconds.
std::vector<double> time_to_first_token_buckets();
std::vector<double> inter_token_latency_buckets();
std::vector<double> request_latency_buckets();  // end-to-end and queue time

struct EngineCounters {
  std::uint64_t prompt_tokens = 0;      // of requests that got their first token
  std::uint64_t generation_tokens = 0;  // sampled, every completion's
  // In tokens: prompt tokens looked up in the prefix cache at admission, and those found.
  std::uint64_t prefix_cache_queries = 0;
  std::uint64_t prefix_cache_hits = 0;
  // Requests finished, by why: each is counted once, when its last completion ends.
  std::uint64_t finished_stop = 0;
  std::uint64_t finished_length = 0;
  std::uint64_t finished_abort = 0;
  std::uint64_t finished_error = 0;
  Histogram time_to_first_token = Histogram::with_bounds(time_to_first_token_buckets());
  Histogram inter_token_latency = Histogram::with_bounds(inter_token_latency_buckets());
  Histogram e2e_request_latency = Histogram::with_bounds(request_latency_buckets());
  Histogram request_queue_time = Histogram::with_bounds(request_latency_buckets());


  void count_finished(FinishReason reason, bool error);
};

}  // namespace minivllm
