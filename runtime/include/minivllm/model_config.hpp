#pragma once
// The fields of a Hugging Face config.json that every decoder-only family has. A family's own
// fields (rope scaling kinds, biases, windows) are its plugin's to read (ConfigFields).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace minivllm {

struct ModelConfig {
  std::vector<std::string> architectures;  // e.g. {"Qwen3ForCausalLM"}
  std::string model_type;                  // e.g. "qwen3", "llama"
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;  // config's head_dim, or hidden_size / num_attention_heads
  std::int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::optional<std::int64_t> bos_token_id;
  std::vector<std::int64_t> eos_token_ids;  // config's eos_token_id, int or list
  std::string torch_dtype;                  // informational ("bfloat16", ...)
};

class ConfigFields;

// Reads and validates config.json; throws minivllm::Error naming the file and the field.
ModelConfig load_model_config(const std::filesystem::path& config_json);
// Same, from JSON text; `origin` names the source in errors.
ModelConfig parse_model_config(const std::string& json_text, const std::string& origin);
// Same, from the parsed file.
ModelConfig model_config_from(const ConfigFields& fields);

}  // namespace minivllm
