#pragma once
// `minivllm serve`: binds the HTTP port, loads the model (GET /health answers 503 meanwhile),
// prints "listening on http://HOST:PORT" once it would answer 200, and serves until SIGINT or
// SIGTERM, which end every stream with finish_reason "abort".
#include <cstdint>
#include <string>

#include <minivllm/config.hpp>

namespace minivllm::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;   // 0: a free one
  std::string api_key;         // "": MINIVLLM_API_KEY, else none
  std::string served_model_name;  // "": the model folder's name
};

// Returns the process's exit code (0 after a signal); throws minivllm::Error when the model or
// the address cannot be had.
int serve(const Config& config, const ServeOptions& options);

}  // namespace minivllm::server
