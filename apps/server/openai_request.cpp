#include "server/openai_request.hpp"

#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "actors/json_reader.hpp"

namespace minivllm::server {

using nlohmann::json;

ApiError::ApiError(int status, std::string message, std::string param)
    : std::runtime_error(std::move(message)), status(status), param(std::move(param)) {
  switch (status) {
    case 401: type = "authentication_error"; break;
    case 404: type = "not_found_error"; break;
    case 503: type = "service_unavailable_error"; break;
    case 500: type = "internal_server_error"; break;
    default: type = "invalid_request_error"; break;
  }
}

std::string error_body(const ApiError& e) {
  json error = {{"message", e.what()},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.status}};
  return json{{"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

constexpr const char* kWhere = "request";

// A body's fields as the request is built: one setter per field name.
struct Fields {
  Fields(ApiRequest& out, GenerateRequest& first, const RequestLimits& limits, const JsonReader& r)
      : out(out), first(first), limits(limits), r(r) {}
  ApiRequest& out;
  GenerateRequest& first;  // the prompt's request (all prompts share its parameters)
  const RequestLimits& limits;
  const JsonReader& r;
  bool stream_options_given = false;
  bool chat_logprobs = false;
  std::optional<int> top_logprobs;
};

using Setter = std::function<void(Fields&, const std::string&, const json&)>;

void set_sampling(std::map<std::string, Setter>& s) {
  s["model"] = [](Fields& f, const std::string& k, const json& v) { f.out.model = f.r.string(k, v); };
  s["user"] = [](Fields& f, const std::string& k, const json& v) { f.r.string(k, v); };
  s["max_tokens"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.max_tokens = f.r.integer<int>(k, v, 1);
  };
  s["temperature"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.temperature = f.r.number(k, v);
  };
  s["top_p"] = [](Fields& f, const std::string& k, const json& v) { f.first.params.top_p = f.r.number(k, v); };
  s["top_k"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.top_k = f.r.integer<int>(k, v, -1);
  };
  s["min_p"] = [](Fields& f, const std::string& k, const json& v) { f.first.params.min_p = f.r.number(k, v); };
  s["repetition_penalty"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.repetition_penalty = f.r.number(k, v);
  };
  s["presence_penalty"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.presence_penalty = f.r.number(k, v);
  };
  s["frequency_penalty"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.frequency_penalty = f.r.number(k, v);
  };
  s["n"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.n = f.r.integer<int>(k, v, 1, f.limits.max_n);
  };
  s["seed"] = [](Fields& f, const std::string& k, const json& v) {
    // OpenAI's seed is a signed 64-bit integer; the engine's is its bit pattern.
    f.first.params.seed = static_cast<std::uint64_t>(f.r.integer<std::int64_t>(k, v));
  };
  s["stop"] = [](Fields& f, const std::string& k, const json& v) {
    std::vector<std::string> stop = f.r.strings(k, v);
    if (static_cast<int>(stop.size()) > f.limits.max_stop)
      f.r.fail(k, "at most " + std::to_string(f.limits.max_stop) + " stop strings");
    for (const std::string& x : stop) {
      if (x.empty()) f.r.fail(k, "a stop string is empty");
      if (static_cast<int>(x.size()) > f.limits.max_stop_bytes)
        f.r.fail(k, "a stop string is over " + std::to_string(f.limits.max_stop_bytes) + " bytes");
    }
    f.first.params.stop = std::move(stop);
  };
  s["stop_token_ids"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.stop_token_ids = f.r.token_ids(k, v);
  };
  s["min_tokens"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.min_tokens = f.r.integer<int>(k, v, 0);
  };
  s["ignore_eos"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.ignore_eos = f.r.boolean(k, v);
  };
  s["skip_special_tokens"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.skip_special_tokens = f.r.boolean(k, v);
  };
  s["include_stop_str_in_output"] = [](Fields& f, const std::string& k, const json& v) {
    f.first.params.include_stop_str_in_output = f.r.boolean(k, v);
  };
  s["stream"] = [](Fields& f, const std::string& k, const json& v) { f.out.stream = f.r.boolean(k, v); };
  s["stream_options"] = [](Fields& f, const std::string& k, const json& v) {
    if (!v.is_object()) f.r.fail(k, "expected an object {\"include_usage\": bool}, got " + shown(v));
    for (const auto& [key, value] : v.items()) {
      if (key == "include_usage") f.out.include_usage = f.r.boolean(k + ".include_usage", value);
      else if (key == "continuous_usage_stats") {
        if (f.r.boolean(k + "." + key, value)) f.r.fail(k + "." + key, "not supported");
      } else f.r.fail(k + "." + key, "unknown (known: include_usage)");
    }
    f.stream_options_given = true;
  };
  // Accepted only where they ask for nothing (OpenAI's clients may send the defaults).
  s["logit_bias"] = [](Fields& f, const std::string& k, const json& v) {
    if (!(v.is_object() && v.empty())) f.r.fail(k, "logit_bias is not supported");
  };
}

const std::map<std::string, Setter>& completion_fields() {
  static const std::map<std::string, Setter> table = [] {
    std::map<std::string, Setter> s;
    set_sampling(s);
    s["prompt"] = [](Fields&, const std::string&, const json&) {};  // read first, apart
    s["logprobs"] = [](Fields& f, const std::string& k, const json& v) {
      f.first.params.logprobs = f.r.integer<int>(k, v, 0, f.limits.max_logprobs);
      f.out.logprobs = true;
    };
    s["echo"] = [](Fields& f, const std::string& k, const json& v) { f.out.echo = f.r.boolean(k, v); };
    s["add_special_tokens"] = [](Fields& f, const std::string& k, const json& v) {
      f.first.add_special_tokens = f.r.boolean(k, v);
    };
    s["best_of"] = [](Fields& f, const std::string& k, const json& v) {
      if (f.r.integer<int>(k, v, 1) != 1) f.r.fail(k, "best_of above 1 is not supported");
    };
    s["suffix"] = [](Fields& f, const std::string& k, const json&) { f.r.fail(k, "suffix is not supported"); };
    return s;
  }();
  return table;
}

const std::map<std::string, Setter>& chat_fields() {
  static const std::map<std::string, Setter> table = [] {
    std::map<std::string, Setter> s;
    set_sampling(s);
    s["messages"] = [](Fields& f, const std::string& k, const json& v) {
      f.first.messages = f.r.messages(k, v);
      if (f.first.messages.empty()) f.r.fail(k, "at least one message is needed");
    };
    s["max_completion_tokens"] = s["max_tokens"];
    s["logprobs"] = [](Fields& f, const std::string& k, const json& v) {
      f.chat_logprobs = f.r.boolean(k, v);
    };
    s["top_logprobs"] = [](Fields& f, const std::string& k, const json& v) {
      f.top_logprobs = f.r.integer<int>(k, v, 0, f.limits.max_logprobs);
    };
    s["add_generation_prompt"] = [](Fields& f, const std::string& k, const json& v) {
      f.first.chat_options.add_generation_prompt = f.r.boolean(k, v);
    };
    s["chat_template_kwargs"] = [](Fields& f, const std::string& k, const json& v) {
      if (!v.is_object()) f.r.fail(k, "expected an object, got " + shown(v));
      for (const auto& [key, value] : v.items()) {
        if (key == "enable_thinking")
          f.first.chat_options.enable_thinking = f.r.boolean(k + "." + key, value);
        else f.r.fail(k + "." + key, "unknown (known: enable_thinking)");
      }
    };
    s["response_format"] = [](Fields& f, const std::string& k, const json& v) {
      if (!(v.is_object() && v.size() == 1 && v.value("type", "") == "text"))
        f.r.fail(k, "only {\"type\": \"text\"} is supported");
    };
    s["tools"] = [](Fields& f, const std::string& k, const json& v) {
      if (!(v.is_array() && v.empty())) f.r.fail(k, "tools are not supported");
    };
    s["tool_choice"] = [](Fields& f, const std::string& k, const json& v) {
      if (v != "none") f.r.fail(k, "tools are not supported");
    };
    return s;
  }();
  return table;
}

std::string known(const std::map<std::string, Setter>& table) {
  std::string out;
  for (const auto& [name, setter] : table) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Reads every field of `object` into `out` (and its first prompt), then checks the whole.
void read_fields(const json& object, const std::map<std::string, Setter>& table, Fields& f) {
  for (const auto& [key, value] : object.items()) {
    const auto it = table.find(key);
    if (it == table.end()) f.r.fail(key, "unknown (known: " + known(table) + ")");
    if (value.is_null() && key != "messages" && key != "prompt") continue;  // null: not given
    it->second(f, key, value);
  }
  if (f.stream_options_given && !f.out.stream)
    throw ApiError(400, "stream_options is only allowed when stream is true", "stream_options");
  try {
    f.first.params.validate();
  } catch (const Error& e) {
    throw ApiError(400, e.what());
  }
}

template <class F>
auto field_errors(F&& f) {
  try {
    return f();
  } catch (const FieldError& e) {
    throw ApiError(400, e.what(), e.field);
  }
}

// The completions prompt: a string, a list of strings, a list of token ids, or a list of those.
std::vector<GenerateRequest> prompts(const json& p, const GenerateRequest& base, const JsonReader& r) {
  std::vector<GenerateRequest> out;
  auto text = [&](const std::string& s) {
    GenerateRequest g = base;
    g.prompt = s;
    out.push_back(std::move(g));
  };
  auto ids = [&](const std::string& field, const json& v) {
    GenerateRequest g = base;
    g.prompt_token_ids = r.token_ids(field, v);
    if (g.prompt_token_ids.empty()) r.fail(field, "a prompt of token ids is empty");
    out.push_back(std::move(g));
  };
  if (p.is_string()) {
    text(p.get<std::string>());
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    ids("prompt", p);
  } else if (p.is_array() && !p.empty()) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const std::string field = "prompt[" + std::to_string(i) + "]";
      if (p[i].is_string()) text(p[i].get<std::string>());
      else if (p[i].is_array()) ids(field, p[i]);
      else r.fail(field, "expected a string or an array of token ids, got " + shown(p[i]));
    }
  } else {
    r.fail("prompt", "expected a string, an array of strings, an array of token ids or an array "
                     "of those, got " + shown(p));
  }
  for (const GenerateRequest& g : out)
    if (g.prompt_token_ids.empty() && g.prompt.empty()) r.fail("prompt", "a prompt is empty");
  return out;
}

}  // namespace

json parse_json_object(std::string_view body) {
  json object;
  try {
    object = json::parse(body);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what());
  }
  if (!object.is_object()) throw ApiError(400, "the body must be a JSON object, got " + shown(object));
  return object;
}

ApiRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
  const json object = parse_json_object(body);
  return field_errors([&] {
    const JsonReader r(kWhere);
    ApiRequest out;
    out.api = Api::completions;
    GenerateRequest first;
    Fields f{out, first, limits, r};
    read_fields(object, completion_fields(), f);
    if (!object.contains("prompt")) r.fail("prompt", "required");
    if (out.echo && out.logprobs) r.fail("echo", "echo with logprobs is not supported");
    out.prompts = prompts(object["prompt"], first, r);
    return out;
  });
}

ApiRequest parse_chat_request(std::string_view body, const RequestLimits& limits) {
  const json object = parse_json_object(body);
  return field_errors([&] {
    const JsonReader r(kWhere);
    ApiRequest out;
    out.api = Api::chat;
    GenerateRequest first;
    // Without max_tokens a chat completion may run to the end of the context, as in vLLM.
    first.params.max_tokens = limits.max_model_len;
    Fields f{out, first, limits, r};
    read_fields(object, chat_fields(), f);
    if (first.messages.empty()) r.fail("messages", "required");
    // Text parts become the text they hold, joined by newlines, as vLLM renders them for
    // templates that take string content (both in-tree templates raise on a list).
    for (ChatMessage& m : first.messages) {
      if (m.content_parts.empty()) continue;
      for (std::size_t i = 0; i < m.content_parts.size(); ++i)
        m.content += (i ? "\n" : "") + m.content_parts[i].text;
      m.content_parts.clear();
    }
    if (f.top_logprobs && !f.chat_logprobs) r.fail("top_logprobs", "needs \"logprobs\": true");
    if (f.chat_logprobs) {
      out.logprobs = true;
      first.params.logprobs = f.top_logprobs.value_or(0);
    }
    out.prompts.push_back(std::move(first));
    return out;
  });
}

}  // namespace minivllm::server
