#include "cli/latency_stats.hpp"

#include <algorithm>
#include <cstdio>

#include <minivllm/error.hpp>

namespace minivllm::cli {
namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

nlohmann::json json_of(const Summary& s) {
  if (s.count == 0) return nullptr;
  return {{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}, {"count", s.count}};
}

}  // namespace

Summary summarise(std::vector<double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    const double rank = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(rank);
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
  };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  double total = 0;
  for (double v : values) total += v;
  s.mean = total / static_cast<double>(values.size());
  return s;
}

LatencyResult measure(const std::vector<RequestTimes>& requests, Clock::time_point start,
                      Clock::time_point end) {
  LatencyResult r;
  r.num_requests = requests.size();
  r.seconds = std::chrono::duration<double>(end - start).count();
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestTimes& t : requests) {
    if (!t.error.empty()) throw Error("a request failed: " + t.error);
    r.output_tokens += static_cast<std::int64_t>(t.tokens.size());
    e2e.push_back(ms(t.done - t.sent));
    if (t.tokens.empty()) continue;
    ttft.push_back(ms(t.tokens.front() - t.sent));
    if (t.tokens.size() < 2) continue;
    const auto gaps = static_cast<double>(t.tokens.size() - 1);
    tpot.push_back(ms(t.tokens.back() - t.tokens.front()) / gaps);
    for (std::size_t k = 1; k < t.tokens.size(); ++k) itl.push_back(ms(t.tokens[k] - t.tokens[k - 1]));
  }
  r.ttft = summarise(std::move(ttft));
  r.tpot = summarise(std::move(tpot));
  r.itl = summarise(std::move(itl));
  r.e2e = summarise(std::move(e2e));
  return r;
}

void print_latency_table(const LatencyResult& r) {
  std::printf("  %-10s %10s %10s %10s %10s\n", "ms", "p50", "p90", "p99", "mean");
  const std::pair<const char*, const Summary*> rows[] = {
      {"TTFT", &r.ttft}, {"TPOT", &r.tpot}, {"ITL", &r.itl}, {"E2E", &r.e2e}};
  for (const auto& [name, s] : rows) {
    if (s->count == 0)
      std::printf("  %-10s %10s %10s %10s %10s\n", name, "-", "-", "-", "-");
    else
      std::printf("  %-10s %10.3f %10.3f %10.3f %10.3f\n", name, s->p50, s->p90, s->p99, s->mean);
  }
  std::fflush(stdout);
}

nlohmann::json latency_json(const LatencyResult& r) {
  return {{"num_requests", r.num_requests},
          {"output_tokens", r.output_tokens},
          {"seconds", r.seconds},
          {"output_tokens_per_s", static_cast<double>(r.output_tokens) / r.seconds},
          {"ttft_ms", json_of(r.ttft)},
          {"tpot_ms", json_of(r.tpot)},
          {"itl_ms", json_of(r.itl)},
          {"e2e_ms", json_of(r.e2e)}};
}

}  // namespace minivllm::cli
