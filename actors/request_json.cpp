#include "actors/request_json.hpp"

#include "actors/json_reader.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

namespace minivllm {
namespace {

using nlohmann::json;

using Reader = JsonReader;
using Setter = std::function<void(const Reader&, const std::string&, const json&, GenerateRequest&)>;

// Every field the object may hold, in the order errors list them.
const std::vector<std::pair<std::string, Setter>>& fields() {
  static const std::vector<std::pair<std::string, Setter>> table = {
      {"request_id", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.request_id = r.string(f, v);
       }},
      {"prompt", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.prompt = r.string(f, v);
       }},
      {"prompt_token_ids", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.prompt_token_ids = r.token_ids(f, v);
       }},
      {"messages", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.messages = r.messages(f, v);
       }},
      {"n", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.n = r.integer<int>(f, v);
       }},
      {"temperature", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.temperature = r.number(f, v);
       }},
      {"top_k", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.top_k = r.integer<int>(f, v);
       }},
      {"top_p", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.top_p = r.number(f, v);
       }},
      {"min_p", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.min_p = r.number(f, v);
       }},
      {"repetition_penalty", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.repetition_penalty = r.number(f, v);
       }},
      {"presence_penalty", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.presence_penalty = r.number(f, v);
       }},
      {"frequency_penalty", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.frequency_penalty = r.number(f, v);
       }},
      {"seed", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         if (v.is_null()) q.params.seed.reset();
         else q.params.seed = r.integer<std::uint64_t>(f, v);
       }},
      {"max_tokens", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.max_tokens = r.integer<int>(f, v);
       }},
      {"min_tokens", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.min_tokens = r.integer<int>(f, v);
       }},
      {"stop", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.stop = r.strings(f, v);
       }},
      {"include_stop_str_in_output", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.include_stop_str_in_output = r.boolean(f, v);
       }},
      {"stop_token_ids", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.stop_token_ids = r.token_ids(f, v);
       }},
      {"ignore_eos", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.ignore_eos = r.boolean(f, v);
       }},
      {"logprobs", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         if (v.is_null()) q.params.logprobs.reset();
         else q.params.logprobs = r.integer<int>(f, v);
       }},
      {"prompt_logprobs", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         if (v.is_null()) q.params.prompt_logprobs.reset();
         else q.params.prompt_logprobs = r.integer<int>(f, v);
       }},
      {"skip_special_tokens", [](const Reader& r, const std::string& f, const json& v, GenerateRequest& q) {
         q.params.skip_special_tokens = r.boolean(f, v);
       }},
  };
  return table;
}

std::string known_fields() {
  std::string out;
  for (const auto& [name, setter] : fields()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

GenerateRequest generate_request_from_json(const json& object, const SamplingParams& defaults,
                                           std::string_view where) {
  const Reader reader(where);
  const std::string origin(where);
  if (!object.is_object())
    throw Error(origin + ": expected a request object {\"prompt\": ...}, got " + shown(object));
  GenerateRequest request;
  request.params = defaults;
  int prompts = 0;
  for (const auto& [key, value] : object.items()) {
    const Setter* setter = nullptr;
    for (const auto& [name, s] : fields())
      if (name == key) setter = &s;
    if (setter == nullptr) reader.fail(key, "unknown (known: " + known_fields() + ")");
    (*setter)(reader, key, value, request);
    prompts += key == "prompt" || key == "prompt_token_ids" || key == "messages";
  }
  if (prompts != 1)
    throw Error(origin + ": a request needs exactly one of \"prompt\", \"prompt_token_ids\" and "
                         "\"messages\" (it has " + std::to_string(prompts) + ")");
  try {
    request.params.validate();
  } catch (const Error& e) {
    throw Error(origin + ": " + e.what());
  }
  return request;
}

GenerateRequest parse_generate_request(std::string_view json_text, const SamplingParams& defaults,
                                       std::string_view where) {
  json object;
  try {
    object = json::parse(json_text);
  } catch (const json::exception& e) {
    throw Error(std::string(where) + ": not valid JSON (" + e.what() + ")");
  }
  return generate_request_from_json(object, defaults, where);
}

}  // namespace minivllm
