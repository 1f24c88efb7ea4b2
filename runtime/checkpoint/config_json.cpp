#include "checkpoint/config_json.hpp"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace minivllm {
namespace {

using json = nlohmann::json;

bool is_int64(const json& v) {
  return v.is_number_integer() &&
         !(v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX));
}

class JsonConfigFields final : public ConfigFields {
 public:
  // `root` keeps the document alive for nested objects; `object` points into it.
  JsonConfigFields(std::shared_ptr<const json> root, const json* object, std::string origin)
      : root_(std::move(root)), object_(object), origin_(std::move(origin)) {}

  const std::string& origin() const override { return origin_; }
  bool has(std::string_view field) const override { return find(field) != nullptr; }
  std::string dump(std::string_view field) const override {
    const json* v = find(field);
    return v ? v->dump() : std::string();
  }

  bool boolean(std::string_view field, bool fallback) const override {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(field, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::int64_t integer(std::string_view field, std::int64_t fallback) const override {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!is_int64(*v)) fail(field, "expected an integer, got " + v->dump());
    return v->get<std::int64_t>();
  }
  double number(std::string_view field, double fallback) const override {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_number()) fail(field, "expected a number, got " + v->dump());
    return v->get<double>();
  }
  std::string string(std::string_view field, std::string_view fallback) const override {
    const json* v = find(field);
    if (v == nullptr) return std::string(fallback);
    if (!v->is_string()) fail(field, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }
  std::vector<std::string> strings(std::string_view field) const override {
    const json* v = find(field);
    std::vector<std::string> out;
    if (v == nullptr) return out;
    if (!v->is_array()) fail(field, "expected a list of strings, got " + v->dump());
    for (const json& x : *v) {
      if (!x.is_string()) fail(field, "expected a list of strings, got " + v->dump());
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  std::vector<std::int64_t> integers(std::string_view field) const override {
    const json* v = find(field);
    std::vector<std::int64_t> out;
    if (v == nullptr) return out;
    auto add = [&](const json& x) {
      if (!is_int64(x)) fail(field, "expected an integer or a list of integers, got " + v->dump());
      out.push_back(x.get<std::int64_t>());
    };
    if (v->is_array())
      for (const json& x : *v) add(x);
    else
      add(*v);
    return out;
  }
  std::unique_ptr<ConfigFields> object(std::string_view field) const override {
    const json* v = find(field);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) fail(field, "expected an object or null, got " + v->dump());
    return std::make_unique<JsonConfigFields>(root_, v, origin_ + " " + std::string(field));
  }

 private:
  const json* find(std::string_view field) const {
    auto it = object_->find(field);
    return it == object_->end() || it->is_null() ? nullptr : &*it;
  }

  std::shared_ptr<const json> root_;
  const json* object_;
  std::string origin_;
};

}  // namespace

std::unique_ptr<ConfigFields> parse_config_fields(const std::string& text,
                                                  const std::string& origin) {
  auto root = std::make_shared<json>();
  try {
    *root = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(origin + ": not valid JSON: " + e.what());
  }
  if (!root->is_object()) throw Error(origin + ": expected a JSON object");
  const json* object = root.get();
  return std::make_unique<JsonConfigFields>(std::move(root), object, origin);
}

std::unique_ptr<ConfigFields> load_config_fields(const std::filesystem::path& config_json) {
  std::ifstream in(config_json);
  if (!in) throw Error(config_json.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config_fields(text.str(), config_json.string());
}

}  // namespace minivllm
