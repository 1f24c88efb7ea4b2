#include "server/prometheus.hpp"

#include <cstdio>
#include <cstdlib>

namespace minivllm::server {
namespace {

// Label values escape backslash, quote and newline.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// The shortest of %.15g..%.17g that reads back as x (0.1, not 0.10000000000000001).
std::string number(double x) {
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

class Exposition {
 public:
  explicit Exposition(const std::string& model_name)
      : model_label_("model_name=\"" + escaped(model_name) + "\"") {}

  void family(const std::string& name, const char* type, const char* help) {
    text_ += "# HELP minivllm:" + name + " " + help + "\n";
    text_ += "# TYPE minivllm:" + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& value, const std::string& labels = "") {
    text_ += "minivllm:" + name + "{" + model_label_ + labels + "} " + value + "\n";
  }
  void gauge(const std::string& name, const char* help, double value) {
    family(name, "gauge", help);
    sample(name, number(value));
  }
  void counter(const std::string& name, const char* help, std::uint64_t value) {
    family(name, "counter", help);
    sample(name, std::to_string(value));
  }
  void histogram(const std::string& name, const char* help, const Histogram& h) {
    family(name, "histogram", help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      sample(name + "_bucket", std::to_string(cumulative), ",le=\"" + number(h.bounds[i]) + "\"");
    }
    sample(name + "_bucket", std::to_string(h.count), ",le=\"+Inf\"");
    sample(name + "_sum", number(h.sum));
    sample(name + "_count", std::to_string(h.count));
  }
  std::string take() { return std::move(text_); }

 private:
  std::string model_label_;
  std::string text_;
};

}  // namespace

std::string prometheus_text(const EngineStats& stats, const std::string& model_name,
                            const std::map<int, std::uint64_t>& http_statuses) {
  const EngineCounters& c = stats.counters;
  Exposition e(model_name);
  e.gauge("num_requests_running", "Requests in the running batch.", static_cast<double>(stats.num_running));
  e.gauge("num_requests_waiting", "Requests waiting to run.", static_cast<double>(stats.num_waiting));
  const double used = stats.num_blocks == 0
                          ? 0.0
                          : static_cast<double>(stats.num_blocks - stats.num_free_blocks) /
                                static_cast<double>(stats.num_blocks);
  e.gauge("kv_cache_usage_perc", "Fraction of KV-cache blocks in use (1 = all).", used);
  e.counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            c.prefix_cache_queries);
  e.counter("prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", c.prefix_cache_hits);
  e.counter("prompt_tokens_total", "Prompt tokens of requests that got their first token.",
            c.prompt_tokens);
  e.counter("generation_tokens_total", "Tokens generated.", c.generation_tokens);
  e.family("request_success_total", "counter", "Requests finished, by finish reason.");
  e.sample("request_success_total", std::to_string(c.finished_stop), ",finished_reason=\"stop\"");
  e.sample("request_success_total", std::to_string(c.finished_length), ",finished_reason=\"length\"");
  e.sample("request_success_total", std::to_string(c.finished_abort), ",finished_reason=\"abort\"");
  e.sample("request_success_total", std::to_string(c.finished_error), ",finished_reason=\"error\"");
  e.histogram("time_to_first_token_seconds", "Time to the first token, in seconds.",
              c.time_to_first_token);
  e.histogram("inter_token_latency_seconds", "Time between two tokens of a completion, in seconds.",
              c.inter_token_latency);
  e.histogram("e2e_request_latency_seconds", "Time from arrival to the last token, in seconds.",
              c.e2e_request_latency);
  e.histogram("request_queue_time_seconds", "Time waiting before the first step, in seconds.",
              c.request_queue_time);
  e.family("http_requests_total", "counter", "HTTP requests answered, by status code.");
  for (const auto& [status, count] : http_statuses)
    e.sample("http_requests_total", std::to_string(count), ",status=\"" + std::to_string(status) + "\"");
  return e.take();
}

}  // namespace minivllm::server
