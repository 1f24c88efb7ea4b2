#pragma once
// The OpenAI-compatible API over the engine: routes, authentication, the waiting-queue limit,
// and the answers (whole or as server-sent events) of every endpoint of `minivllm serve`.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "server/engine_client.hpp"
#include "server/http_server.hpp"
#include "server/openai_request.hpp"

namespace minivllm {
class Tokenizer;
}

namespace minivllm::server {

struct ServerSettings {
  std::string model_name;      // what /v1/models lists and requests must name
  std::string api_key;         // "": no authentication
  std::string device;          // what /version says it runs on: the GPU's name, or "cpu"
  RequestLimits limits;
  std::size_t max_in_flight = 0;  // prompts running or waiting; more are answered 503
};

class OpenAiServer {
 public:
  OpenAiServer(ServerSettings settings, EngineClient engine,
               std::shared_ptr<const Tokenizer> tokenizer,
               std::function<std::map<int, std::uint64_t>()> http_statuses);
  ~OpenAiServer();

  void handle(HttpRequest request, std::shared_ptr<Exchange> exchange);

  struct Shared;  // public for the requests in openai_server.cpp

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace minivllm::server
