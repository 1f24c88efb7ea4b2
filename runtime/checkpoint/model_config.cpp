// Hugging Face config.json for Qwen3 and Llama, with HF's defaults for absent fields.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

namespace minivllm {
namespace {

using json = nlohmann::json;

class Fields {
 public:
  Fields(const json& j, const std::string& origin) : j_(j), origin_(origin) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(origin_ + ": field '" + field + "': " + what);
  }

  const json* find(const std::string& field) const {
    auto it = j_.find(field);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  std::int64_t positive_int(const std::string& field) const {
    const json* v = find(field);
    if (v == nullptr) fail(field, "missing (expected a positive integer)");
    if (!v->is_number_integer() || v->get<std::int64_t>() <= 0)
      fail(field, "expected a positive integer, got " + v->dump());
    return v->get<std::int64_t>();
  }

  std::int64_t positive_int_or(const std::string& field, std::int64_t fallback) const {
    return find(field) ? positive_int(field) : fallback;
  }

  double positive_number_or(const std::string& field, double fallback) const {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_number() || v->get<double>() <= 0)
      fail(field, "expected a positive number, got " + v->dump());
    return v->get<double>();
  }

  bool bool_or(const std::string& field, bool fallback) const {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(field, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }

  std::string string_or(const std::string& field, const std::string& fallback) const {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_string()) fail(field, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }

  // An int, or a list of ints (eos_token_id may be either).
  std::vector<std::int64_t> token_ids(const std::string& field) const {
    const json* v = find(field);
    std::vector<std::int64_t> ids;
    if (v == nullptr) return ids;
    auto add = [&](const json& x) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0)
        fail(field, "expected a token id or a list of token ids, got " + v->dump());
      ids.push_back(x.get<std::int64_t>());
    };
    if (v->is_array())
      for (const json& x : *v) add(x);
    else
      add(*v);
    return ids;
  }

 private:
  const json& j_;
  std::string origin_;  // a copy: callers pass temporaries ("<file> rope_scaling")
};

Llama3RopeScaling parse_rope_scaling(const json& j, const std::string& origin) {
  if (!j.is_object()) throw Error(origin + ": field 'rope_scaling': expected an object or null");
  Fields f(j, origin + " rope_scaling");
  // transformers writes "rope_type"; older configs say "type".
  std::string type = f.string_or("rope_type", f.string_or("type", ""));
  if (type != "llama3")
    throw Error(origin + ": field 'rope_scaling': rope type '" + type +
                "' is not supported (supported: llama3, or null for plain RoPE)");
  Llama3RopeScaling s;
  s.factor = f.positive_number_or("factor", 0);
  s.low_freq_factor = f.positive_number_or("low_freq_factor", 0);
  s.high_freq_factor = f.positive_number_or("high_freq_factor", 0);
  s.original_max_position_embeddings = f.positive_int("original_max_position_embeddings");
  if (s.factor == 0 || s.low_freq_factor == 0 || s.high_freq_factor == 0)
    throw Error(origin + ": field 'rope_scaling': llama3 needs factor, low_freq_factor and "
                         "high_freq_factor");
  if (s.high_freq_factor <= s.low_freq_factor)
    throw Error(origin + ": field 'rope_scaling': high_freq_factor must exceed low_freq_factor");
  return s;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(origin + ": expected a JSON object");
  Fields f(j, origin);
  ModelConfig c;

  const json* archs = f.find("architectures");
  if (archs == nullptr || !archs->is_array() || archs->empty())
    f.fail("architectures", "expected a non-empty list of architecture names");
  for (const json& a : *archs) {
    if (!a.is_string()) f.fail("architectures", "expected strings, got " + a.dump());
    c.architectures.push_back(a.get<std::string>());
  }
  c.model_type = f.string_or("model_type", "");
  if (c.model_type.empty()) f.fail("model_type", "missing (expected e.g. \"qwen3\" or \"llama\")");

  c.vocab_size = f.positive_int("vocab_size");
  c.hidden_size = f.positive_int("hidden_size");
  c.intermediate_size = f.positive_int("intermediate_size");
  c.num_hidden_layers = f.positive_int("num_hidden_layers");
  c.num_attention_heads = f.positive_int("num_attention_heads");
  c.num_key_value_heads = f.positive_int_or("num_key_value_heads", c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    f.fail("num_key_value_heads", std::to_string(c.num_key_value_heads) +
                                      " does not divide num_attention_heads " +
                                      std::to_string(c.num_attention_heads));
  if (f.find("head_dim") == nullptr && c.hidden_size % c.num_attention_heads != 0)
    f.fail("head_dim", "absent, and hidden_size is not a multiple of num_attention_heads");
  c.head_dim = f.positive_int_or("head_dim", c.hidden_size / c.num_attention_heads);
  c.max_position_embeddings = f.positive_int_or("max_position_embeddings", 2048);
  c.rms_norm_eps = f.positive_number_or("rms_norm_eps", 1e-6);
  c.rope_theta = f.positive_number_or("rope_theta", 10000.0);
  if (const json* rs = f.find("rope_scaling")) c.rope_scaling = parse_rope_scaling(*rs, origin);
  c.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  if (auto bos = f.token_ids("bos_token_id"); !bos.empty()) c.bos_token_id = bos.front();
  c.eos_token_ids = f.token_ids("eos_token_id");
  c.torch_dtype = f.string_or("torch_dtype", f.string_or("dtype", ""));
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  std::ifstream in(config_json);
  if (!in) throw Error(config_json.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), config_json.string());
}

}  // namespace minivllm
