// The fields of a Hugging Face config.json every decoder family has, with HF's defaults for
// absent ones. A family's own fields are its plugin's (ModelFamily::check_config).
#include <minivllm/model_config.hpp>

#include <minivllm/error.hpp>

#include "checkpoint/config_json.hpp"

namespace minivllm {
namespace {

std::int64_t positive_int(const ConfigFields& f, std::string_view field) {
  if (!f.has(field)) f.fail(field, "missing (expected a positive integer)");
  const std::int64_t v = f.integer(field, 0);
  if (v <= 0) f.fail(field, "expected a positive integer, got " + f.dump(field));
  return v;
}

std::int64_t positive_int_or(const ConfigFields& f, std::string_view field, std::int64_t fallback) {
  return f.has(field) ? positive_int(f, field) : fallback;
}

double positive_number_or(const ConfigFields& f, std::string_view field, double fallback) {
  const double v = f.number(field, fallback);
  if (!(v > 0)) f.fail(field, "expected a positive number, got " + f.dump(field));
  return v;
}

std::vector<std::int64_t> token_ids(const ConfigFields& f, std::string_view field) {
  std::vector<std::int64_t> ids = f.integers(field);
  for (std::int64_t id : ids)
    if (id < 0) f.fail(field, "expected a token id or a list of token ids, got " + f.dump(field));
  return ids;
}

}  // namespace

ModelConfig model_config_from(const ConfigFields& f) {
  ModelConfig c;
  c.architectures = f.strings("architectures");
  if (c.architectures.empty())
    f.fail("architectures", "expected a non-empty list of architecture names");
  c.model_type = f.string("model_type", "");
  if (c.model_type.empty()) f.fail("model_type", "missing (expected e.g. \"qwen3\" or \"llama\")");

  c.vocab_size = positive_int(f, "vocab_size");
  c.hidden_size = positive_int(f, "hidden_size");
  c.intermediate_size = positive_int(f, "intermediate_size");
  c.num_hidden_layers = positive_int(f, "num_hidden_layers");
  c.num_attention_heads = positive_int(f, "num_attention_heads");
  c.num_key_value_heads = positive_int_or(f, "num_key_value_heads", c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    f.fail("num_key_value_heads", std::to_string(c.num_key_value_heads) +
                                      " does not divide num_attention_heads " +
                                      std::to_string(c.num_attention_heads));
  if (!f.has("head_dim") && c.hidden_size % c.num_attention_heads != 0)
    f.fail("head_dim", "absent, and hidden_size is not a multiple of num_attention_heads");
  c.head_dim = positive_int_or(f, "head_dim", c.hidden_size / c.num_attention_heads);
  c.max_position_embeddings = positive_int_or(f, "max_position_embeddings", 2048);
  c.rms_norm_eps = positive_number_or(f, "rms_norm_eps", 1e-6);
  c.rope_theta = positive_number_or(f, "rope_theta", 10000.0);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  if (auto bos = token_ids(f, "bos_token_id"); !bos.empty()) c.bos_token_id = bos.front();
  c.eos_token_ids = token_ids(f, "eos_token_id");
  c.torch_dtype = f.string("torch_dtype", f.string("dtype", ""));
  return c;
}

ModelConfig parse_model_config(const std::string& text, const std::string& origin) {
  return model_config_from(*parse_config_fields(text, origin));
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  return model_config_from(*load_config_fields(config_json));
}

}  // namespace minivllm
