#include "actors/json_reader.hpp"

namespace minivllm {

using nlohmann::json;

std::string shown(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

double JsonReader::number(const std::string& field, const json& v) const {
  if (!v.is_number()) fail(field, "expected a number, got " + shown(v));
  return v.get<double>();
}

bool JsonReader::boolean(const std::string& field, const json& v) const {
  if (!v.is_boolean()) fail(field, "expected true or false, got " + shown(v));
  return v.get<bool>();
}

std::string JsonReader::string(const std::string& field, const json& v) const {
  if (!v.is_string()) fail(field, "expected a string, got " + shown(v));
  return v.get<std::string>();
}

std::vector<std::int32_t> JsonReader::token_ids(const std::string& field, const json& v) const {
  if (!v.is_array()) fail(field, "expected an array of token ids, got " + shown(v));
  std::vector<std::int32_t> ids;
  ids.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    ids.push_back(integer<std::int32_t>(field + "[" + std::to_string(i) + "]", v[i]));
  return ids;
}

std::vector<std::string> JsonReader::strings(const std::string& field, const json& v) const {
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) fail(field, "expected a string or an array of strings, got " + shown(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(string(field + "[" + std::to_string(i) + "]", v[i]));
  return out;
}

namespace {

std::vector<ChatContentPart> content_parts(const JsonReader& r, const std::string& field,
                                           const json& v) {
  std::vector<ChatContentPart> parts;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    const json& p = v[i];
    if (!p.is_object()) r.fail(at, "expected a content part {\"type\": \"text\", \"text\"}, got " + shown(p));
    ChatContentPart part;
    for (const auto& [key, value] : p.items()) {
      if (key == "type") part.type = r.string(at + ".type", value);
      else if (key == "text") part.text = r.string(at + ".text", value);
      else r.fail(at + "." + key, "unknown (known: type, text)");
    }
    if (part.type != "text") r.fail(at + ".type", "only \"text\" parts are supported, got \"" + part.type + "\"");
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

std::vector<ChatMessage> JsonReader::messages(const std::string& name, const json& v) const {
  if (!v.is_array())
    fail(name, "expected an array of {\"role\", \"content\"} objects, got " + shown(v));
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string field = name + "[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object()) fail(field, "expected an object {\"role\", \"content\"}, got " + shown(m));
    ChatMessage message;
    bool has_role = false, has_content = false;
    for (const auto& [key, value] : m.items()) {
      if (key == "role") {
        message.role = string(field + ".role", value);
        has_role = true;
      } else if (key == "content") {
        if (value.is_array()) message.content_parts = content_parts(*this, field + ".content", value);
        else message.content = string(field + ".content", value);
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

}  // namespace minivllm
