#pragma once
// A generate request as a JSON object, with vLLM's names:
//   {"request_id": "a", "prompt": "text" | "prompt_token_ids": [1, 2] | "messages": [{"role",
//    "content"}], "temperature": 0, "max_tokens": 8, "stop": ["\n"], ...}
// Exactly one of prompt, prompt_token_ids and messages; the other fields are SamplingParams'
// (n, temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
// seed, max_tokens, min_tokens, stop, include_stop_str_in_output, stop_token_ids, ignore_eos,
// logprobs, prompt_logprobs, skip_special_tokens) and override `defaults`. No CAF here: the launcher and the fuzzer
// use it without the actors.
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include <minivllm/actors/requests.hpp>

namespace minivllm {

// Throws minivllm::Error "<where>: field 'top_k': expected ..., got ..." for an unknown field, a
// wrong type, a number that does not fit the field's integer type, or none or several prompts;
// then runs SamplingParams::validate() (its error prefixed with `where`).
GenerateRequest generate_request_from_json(const nlohmann::json& object,
                                           const SamplingParams& defaults, std::string_view where);

// The same from JSON text (the text's syntax errors are reported with `where` too).
GenerateRequest parse_generate_request(std::string_view json_text, const SamplingParams& defaults,
                                       std::string_view where);

}  // namespace minivllm
