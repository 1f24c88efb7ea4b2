#include <minivllm/engine_counters.hpp>

#include <algorithm>

namespace minivllm {

Histogram Histogram::with_bounds(std::vector<double> bounds) {
  Histogram h;
  h.counts.assign(bounds.size() + 1, 0);
  h.bounds = std::move(bounds);
  return h;
}

void Histogram::observe(double value) {
  // "le": a value equal to a bound is in that bound's bucket.
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[static_cast<std::size_t>(bucket)];
  sum += value;
  ++count;
}

// vLLM v1's (vllm/v1/metrics/loggers.py).
std::vector<double> time_to_first_token_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> inter_token_latency_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> request_latency_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

void EngineCounters::count_finished(FinishReason reason, bool error) {
  if (error) ++finished_error;
  else if (reason == FinishReason::stop) ++finished_stop;
  else if (reason == FinishReason::length) ++finished_length;
  else ++finished_abort;
}

}  // namespace minivllm
