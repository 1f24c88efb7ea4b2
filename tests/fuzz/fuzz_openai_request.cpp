// The server's request bodies (apps/server/openai_request.hpp): POST /v1/completions when the
// first byte is even, /v1/chat/completions when odd, the body after it. A body is refused with an
// ApiError (400) or accepted; what is accepted must hold at least one prompt, each within the
// limits and with parameters SamplingParams::validate() accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <minivllm/error.hpp>

#include "server/openai_request.hpp"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  minivllm::server::RequestLimits limits;
  limits.max_model_len = 256;
  minivllm::server::ApiRequest r;
  try {
    r = chat ? minivllm::server::parse_chat_request(body, limits)
             : minivllm::server::parse_completion_request(body, limits);
  } catch (const minivllm::server::ApiError& e) {
    FUZZ_CHECK(e.status == 400);
    return 0;
  }
  FUZZ_CHECK(!r.prompts.empty());
  FUZZ_CHECK(!r.include_usage || r.stream);
  for (const minivllm::GenerateRequest& g : r.prompts) {
    FUZZ_CHECK(chat ? !g.messages.empty() : (!g.prompt.empty() || !g.prompt_token_ids.empty()));
    for (const minivllm::ChatMessage& m : g.messages) FUZZ_CHECK(m.content_parts.empty());
    const minivllm::SamplingParams& p = g.params;
    FUZZ_CHECK(p.n >= 1 && p.n <= limits.max_n);
    FUZZ_CHECK(!p.logprobs || (*p.logprobs >= 0 && *p.logprobs <= limits.max_logprobs));
    FUZZ_CHECK(static_cast<int>(p.stop.size()) <= limits.max_stop);
    for (const auto& s : p.stop) FUZZ_CHECK(!s.empty() && static_cast<int>(s.size()) <= limits.max_stop_bytes);
    try {
      p.validate();
    } catch (const minivllm::Error&) {
      __builtin_trap();  // accepted parameters that the engine would refuse
    }
  }
  return 0;
}
