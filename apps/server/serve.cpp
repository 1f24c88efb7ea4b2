#include "server/serve.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

#include "backend/make_ops.hpp"
#include "checkpoint/config_json.hpp"
#include "log/log.hpp"
#include "server/engine_client.hpp"
#include "server/http_server.hpp"
#include "server/openai_request.hpp"
#include "server/openai_server.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm::server {
namespace {

constexpr int kHttpThreads = 2;
// How long a signal waits for the aborted streams to be written out.
constexpr auto kDrainTimeout = std::chrono::seconds(10);

HttpLimits http_limits(const ServerOptions& s) {
  return {static_cast<std::uint64_t>(s.max_body_bytes), static_cast<std::uint32_t>(s.max_header_bytes),
          static_cast<std::size_t>(s.max_headers), static_cast<int>(s.header_timeout_s)};
}

std::string model_name(const Config& config, const ServeOptions& options) {
  if (!options.served_model_name.empty()) return options.served_model_name;
  const std::filesystem::path p = config.model.path.lexically_normal();
  return (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
}

}  // namespace

int serve(const Config& config, const ServeOptions& options) {
  std::string api_key = options.api_key;
  if (api_key.empty())
    if (const char* env = std::getenv("MINIVLLM_API_KEY")) api_key = env;

  // Until the model is loaded every request is answered 503; then the API takes over.
  std::shared_ptr<OpenAiServer> api;
  HttpServer http(options.host, options.port, http_limits(config.server),
                  [&api](HttpRequest request, std::shared_ptr<Exchange> exchange) {
                    if (auto a = std::atomic_load(&api)) return a->handle(std::move(request), std::move(exchange));
                    ApiError e(503, "the model is loading");
                    exchange->respond({503, "application/json", error_body(e), {}});
                  });
  std::thread io([&http] { http.run(kHttpThreads); });
  // Stops the HTTP threads before the actor system goes: a thread that called into CAF holds a
  // reference to the system's logger, which the system's destructor waits for.
  struct Joiner {
    HttpServer& http;
    std::thread& io;
    void stop() {
      if (!io.joinable()) return;
      http.stop();
      io.join();
    }
    ~Joiner() { stop(); }
  } joiner{http, io};

  caf::actor_system_config cfg;
  add_runtime_types(cfg);
  set_low_latency_scheduling(cfg);
  caf::actor_system sys{cfg};
  const engine_actor engine = spawn_runtime(sys, config);
  EngineClient client(sys, engine);
  const auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_directory(config.model.path));

  ServerSettings settings;
  settings.model_name = model_name(config, options);
  settings.api_key = api_key;
  settings.device = config.runtime.backend == Backend::cuda ? cuda_device_name() : "cpu";
  const ServerOptions& s = config.server;
  const std::int64_t max_model_len = resolve_max_model_len(
      config, model_config_from(*load_config_fields(config.model.path / "config.json")));
  settings.limits = {static_cast<int>(s.max_n), static_cast<int>(s.max_logprobs),
                     static_cast<int>(s.max_stop), static_cast<int>(s.max_stop_bytes),
                     static_cast<int>(max_model_len)};
  const std::int64_t waiting = s.max_waiting > 0 ? s.max_waiting : 4 * config.scheduler.max_num_seqs;
  settings.max_in_flight = static_cast<std::size_t>(config.scheduler.max_num_seqs + waiting);
  std::atomic_store(&api, std::make_shared<OpenAiServer>(settings, client, tokenizer,
                                                        [&http] { return http.status_counts(); }));

  std::atomic<int> signalled{0};
  http.on_signal([&](int signal) { signalled = signal; });
  std::printf("listening on http://%s:%u\n", options.host.c_str(), static_cast<unsigned>(http.port()));
  std::fflush(stdout);
  // The engine stops on its own only when it can run nothing more (a lost device, which every
  // request then is answered with): the server stops too, with an error, for a supervisor to
  // restart the process.
  std::string engine_stopped;
  while (signalled == 0 && engine_stopped.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    engine_stopped = client.device_lost();
  }

  if (engine_stopped.empty()) {
    log_line(LogLevel::info, log_format("signal %d: aborting every request, then stopping", signalled.load()));
  } else {
    log_line(LogLevel::error, "the engine stopped (" + engine_stopped + "): the server exits");
  }
  http.stop_accepting();
  client.shutdown();
  const auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
  while (http.open_exchanges() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Give the last chunks a moment on the wire before the connections close.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::atomic_store(&api, std::shared_ptr<OpenAiServer>());
  joiner.stop();
  return engine_stopped.empty() ? 0 : 1;
}

}  // namespace minivllm::server
