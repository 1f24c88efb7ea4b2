#pragma once
// The bodies of POST /v1/completions and /v1/chat/completions (OpenAI's fields and vLLM's
// extras) as the engine's GenerateRequests, and the errors OpenAI's clients expect for bad ones.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/request.hpp>

namespace minivllm::server {

// An error answered as OpenAI's {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "");
  int status;
  std::string type;   // "invalid_request_error", "authentication_error", ...
  std::string param;  // the field at fault, "" for none
};

// The error body for `e`.
std::string error_body(const ApiError& e);

struct RequestLimits {
  int max_n = 16;
  int max_logprobs = 20;
  int max_stop = 16;
  int max_stop_bytes = 256;
  int max_model_len = 2048;  // a chat request without max_tokens may run this far
};

enum class Api { completions, chat };

// What one HTTP request asks for: one GenerateRequest per prompt (a completions request may
// list several), and how the answer is shaped.
struct ApiRequest {
  Api api = Api::completions;
  std::string model;  // "" when not given
  std::vector<GenerateRequest> prompts;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;           // completions: the prompt's text before each completion's
  bool logprobs = false;       // report logprobs (SamplingParams::logprobs is how many alternatives)
};

// Throws ApiError (400, naming the field) for malformed JSON, an unknown or mistyped field, a
// value out of range or over the limits. Prompt lengths are the engine's to check.
// A body that must be a JSON object; ApiError 400 otherwise.
nlohmann::json parse_json_object(std::string_view body);

ApiRequest parse_completion_request(std::string_view body, const RequestLimits& limits);
ApiRequest parse_chat_request(std::string_view body, const RequestLimits& limits);

}  // namespace minivllm::server
