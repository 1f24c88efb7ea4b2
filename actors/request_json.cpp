#include "actors/request_json.hpp"

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

// What a value is, for errors. Scalars are shown; containers only named, so that an error never
// copies (or recurses through) a large or deeply nested value.
std::string shown(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

class Reader {
 public:
  explicit Reader(std::string_view where) : where_(where) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(where_ + ": field '" + field + "': " + what);
  }

  // An integer in [lo, hi]: JSON floats (1.0 too) and anything that would narrow are errors.
  template <class T>
  T integer(const std::string& field, const json& v,
            T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) const {
    const std::string expected =
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got ";
    if (v.is_number_unsigned()) {
      const auto x = v.get<std::uint64_t>();
      if (x > static_cast<std::uint64_t>(hi)) fail(field, expected + shown(v));
      return static_cast<T>(x);
    }
    if (v.is_number_integer()) {  // negative: nlohmann keeps non-negative ones unsigned
      const auto x = v.get<std::int64_t>();
      if constexpr (std::is_unsigned_v<T>) fail(field, expected + shown(v));
      else if (x < static_cast<std::int64_t>(lo)) fail(field, expected + shown(v));
      return static_cast<T>(x);
    }
    fail(field, expected + shown(v));
  }

  double number(const std::string& field, const json& v) const {
    if (!v.is_number()) fail(field, "expected a number, got " + shown(v));
    return v.get<double>();
  }

  bool boolean(const std::string& field, const json& v) const {
    if (!v.is_boolean()) fail(field, "expected true or false, got " + shown(v));
    return v.get<bool>();
  }

  std::string string(const std::string& field, const json& v) const {
    if (!v.is_string()) fail(field, "expected a string, got " + shown(v));
    return v.get<std::string>();
  }

  std::vector<std::int32_t> token_ids(const std::string& field, const json& v) const {
    if (!v.is_array()) fail(field, "expected an array of token ids, got " + shown(v));
    std::vector<std::int32_t> ids;
    ids.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      ids.push_back(integer<std::int32_t>(field + "[" + std::to_string(i) + "]", v[i]));
    return ids;
  }

  // A string or a list of strings (vLLM's stop).
  std::vector<std::string> strings(const std::string& field, const json& v) const {
    if (v.is_string()) return {v.get<std::string>()};
    if (!v.is_array()) fail(field, "expected a string or an array of strings, got " + shown(v));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(string(field + "[" + std::to_string(i) + "]", v[i]));
    return out;
  }

  std::vector<ChatMessage> messages(const json& v) const {
    if (!v.is_array()) fail("messages", "expected an array of {\"role\", \"content\"} objects, got " + shown(v));
    std::vector<ChatMessage> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string field = "messages[" + std::to_string(i) + "]";
      const json& m = v[i];
      if (!m.is_object()) fail(field, "expected an object {\"role\", \"content\"}, got " + shown(m));
      ChatMessage message;
      bool has_role = false, has_content = false;
      for (const auto& [key, value] : m.items()) {
        if (key == "role") {
          message.role = string(field + ".role", value);
          has_role = true;
        } else if (key == "content") {
          message.content = string(field + ".content", value);
          has_content = true;
        } else if (key == "reasoning_content") {
          if (!value.is_null()) message.reasoning_content = string(field + ".reasoning_content", value);
        } else {
          fail(field + "." + key, "unknown (known: role, content, reasoning_content)");
        }
      }
      if (!has_role || !has_content) fail(field, "needs both \"role\" and \"content\"");
      out.push_back(std::move(message));
    }
    return out;
  }

 private:
  std::string where_;
};

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
      {"messages", [](const Reader& r, const std::string&, const json& v, GenerateRequest& q) {
         q.messages = r.messages(v);
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
