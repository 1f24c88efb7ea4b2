#pragma once
// GET /metrics: the engine's counters in the Prometheus text exposition format (0.0.4), under
// vLLM's metric names with a `minivllm:` prefix and a model_name label, so that dashboards made
// for vLLM read them.
#include <cstdint>
#include <map>
#include <string>

#include <minivllm/actors/requests.hpp>

namespace minivllm::server {

// `http_statuses`: the server's answers by status code (http_requests_total{status}).
std::string prometheus_text(const EngineStats& stats, const std::string& model_name,
                            const std::map<int, std::uint64_t>& http_statuses);

}  // namespace minivllm::server
