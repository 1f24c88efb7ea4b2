// A Hugging Face config.json into the model config (parse_model_config) and the toolkit's
// llama3 rope_scaling. What they accept must hold what the loaders rely on: positive sizes,
// heads that divide, a sane rope scaling.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <minivllm/error.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model_config.hpp>

#include "checkpoint/config_json.hpp"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  minivllm::ModelConfig c;
  std::optional<minivllm::layers::Llama3RopeScaling> rope_scaling;
  try {
    const auto fields = minivllm::parse_config_fields(text, "config.json");
    c = minivllm::model_config_from(*fields);
    rope_scaling = minivllm::layers::read_llama3_rope_scaling(*fields);
  } catch (const minivllm::Error&) {
    return 0;
  }
  FUZZ_CHECK(!c.architectures.empty() && !c.model_type.empty());
  FUZZ_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0);
  FUZZ_CHECK(c.num_hidden_layers > 0 && c.num_attention_heads > 0 && c.num_key_value_heads > 0);
  FUZZ_CHECK(c.num_attention_heads % c.num_key_value_heads == 0);
  FUZZ_CHECK(c.head_dim > 0 && c.max_position_embeddings > 0);
  FUZZ_CHECK(c.rms_norm_eps > 0 && c.rope_theta > 0);
  if (rope_scaling) {
    FUZZ_CHECK(rope_scaling->factor > 0 && rope_scaling->low_freq_factor > 0);
    FUZZ_CHECK(rope_scaling->high_freq_factor > rope_scaling->low_freq_factor);
    FUZZ_CHECK(rope_scaling->original_max_position_embeddings > 0);
  }
  if (c.bos_token_id) FUZZ_CHECK(*c.bos_token_id >= 0);
  for (std::int64_t id : c.eos_token_ids) FUZZ_CHECK(id >= 0);
  return 0;
}
