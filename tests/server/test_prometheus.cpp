// /metrics' text: vLLM's names under minivllm:, the model_name label, cumulative histogram
// buckets ending in +Inf.
#include <gtest/gtest.h>

#include "server/prometheus.hpp"

namespace minivllm::server {
namespace {

TEST(Prometheus, GaugesCountersAndHistograms) {
  EngineStats s;
  s.num_running = 2;
  s.num_waiting = 1;
  s.num_blocks = 8;
  s.num_free_blocks = 6;
  s.counters.prompt_tokens = 30;
  s.counters.finished_abort = 4;
  s.counters.finished_error = 5;
  s.counters.time_to_first_token = Histogram::with_bounds({0.1, 1.0});
  s.counters.time_to_first_token.observe(0.05);
  s.counters.time_to_first_token.observe(0.5);
  s.counters.time_to_first_token.observe(5.0);
  const std::string text = prometheus_text(s, "m\"x", {{200, 3}, {400, 1}});
  const std::string label = R"(model_name="m\"x")";
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\nin\n" << text;
  };
  has("# TYPE minivllm:num_requests_running gauge");
  has("minivllm:num_requests_running{" + label + "} 2");
  has("minivllm:num_requests_waiting{" + label + "} 1");
  has("minivllm:kv_cache_usage_perc{" + label + "} 0.25");
  has("# TYPE minivllm:prompt_tokens_total counter");
  has("minivllm:prompt_tokens_total{" + label + "} 30");
  has("minivllm:request_success_total{" + label + ",finished_reason=\"abort\"} 4");
  has("minivllm:request_success_total{" + label + ",finished_reason=\"error\"} 5");
  has("# TYPE minivllm:time_to_first_token_seconds histogram");
  has("minivllm:time_to_first_token_seconds_bucket{" + label + ",le=\"0.1\"} 1");
  has("minivllm:time_to_first_token_seconds_bucket{" + label + ",le=\"1\"} 2");
  has("minivllm:time_to_first_token_seconds_bucket{" + label + ",le=\"+Inf\"} 3");
  has("minivllm:time_to_first_token_seconds_count{" + label + "} 3");
  has("minivllm:http_requests_total{" + label + ",status=\"400\"} 1");
}

}  // namespace
}  // namespace minivllm::server
