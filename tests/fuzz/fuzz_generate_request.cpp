// A generate request's JSON (prompt, token ids, messages, sampling params) into the internal
// GenerateRequest (actors/request_json.hpp), as `minivllm generate --prompt-file` reads each line.
// What it accepts must have passed SamplingParams::validate() and hold exactly one prompt.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <minivllm/error.hpp>

#include "actors/request_json.hpp"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  minivllm::SamplingParams defaults;
  defaults.max_tokens = 32;
  minivllm::GenerateRequest r;
  try {
    r = minivllm::parse_generate_request(text, defaults, "request");
  } catch (const minivllm::Error&) {
    return 0;
  }
  try {
    r.params.validate();
  } catch (const minivllm::Error&) {
    __builtin_trap();  // accepted parameters that the engine would refuse
  }
  const int prompts = !r.prompt.empty() + !r.prompt_token_ids.empty() + !r.messages.empty();
  FUZZ_CHECK(prompts <= 1);
  return 0;
}
