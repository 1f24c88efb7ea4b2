// config.json fields of Llama-style decoders: what the layers build, and clear errors for the rest.
#include <minivllm/layers.hpp>

#include <minivllm/error.hpp>

namespace minivllm::layers {

void check_decoder_config(const ConfigFields& f, bool qkv_bias) {
  if (const std::string act = f.string("hidden_act", "silu"); act != "silu")
    f.fail("hidden_act", "'" + act + "' is not supported (only silu is built)");
  if (f.boolean("mlp_bias", false))
    f.fail("mlp_bias", "true is not supported (the MLP projections have no biases)");
  if (f.boolean("attention_bias", qkv_bias) != qkv_bias)
    f.fail("attention_bias", qkv_bias ? "false is not supported (this family's q/k/v projections "
                                        "always have biases)"
                                      : "true is not supported (this family's attention "
                                        "projections have no biases)");
  // Qwen2/Qwen3 name a window they do not use unless use_sliding_window says so; a config
  // without the switch (Mistral) uses its sliding_window.
  const bool window = f.has("use_sliding_window") ? f.boolean("use_sliding_window", false)
                                                  : f.has("sliding_window");
  if (window)
    f.fail(f.has("use_sliding_window") ? "use_sliding_window" : "sliding_window",
           "sliding-window attention is not supported (every layer attends to the whole context)");
}

std::optional<Llama3RopeScaling> read_llama3_rope_scaling(const ConfigFields& config) {
  const std::unique_ptr<ConfigFields> f = config.object("rope_scaling");
  if (!f) return std::nullopt;
  // transformers writes "rope_type"; older configs say "type".
  const std::string type = f->string("rope_type", f->string("type", ""));
  if (type != "llama3")
    config.fail("rope_scaling", "rope type '" + type +
                                    "' is not supported (supported: llama3, or null for plain RoPE)");
  Llama3RopeScaling s;
  auto positive = [&](std::string_view field) {
    const double v = f->number(field, 0);
    if (!(v > 0)) f->fail(field, f->has(field) ? "expected a positive number, got " + f->dump(field)
                                              : std::string("missing (llama3 rope scaling needs it)"));
    return v;
  };
  s.factor = positive("factor");
  s.low_freq_factor = positive("low_freq_factor");
  s.high_freq_factor = positive("high_freq_factor");
  s.original_max_position_embeddings = f->integer("original_max_position_embeddings", 0);
  if (s.original_max_position_embeddings <= 0)
    f->fail("original_max_position_embeddings",
            f->has("original_max_position_embeddings")
                ? "expected a positive integer, got " + f->dump("original_max_position_embeddings")
                : std::string("missing (expected a positive integer)"));
  if (s.high_freq_factor <= s.low_freq_factor)
    config.fail("rope_scaling", "high_freq_factor must exceed low_freq_factor");
  return s;
}

void require_plain_rope(const ConfigFields& f) {
  if (f.has("rope_scaling"))
    f.fail("rope_scaling", f.dump("rope_scaling") +
                               " is not supported (this family runs plain RoPE: null or absent)");
}

std::vector<CheckpointTensor> decoder_tensors(const ModelConfig& c, const DecoderTensors& kind) {
  const std::int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const std::int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  std::vector<CheckpointTensor> t;
  auto add = [&t](std::string name, Shape shape) { t.push_back({std::move(name), std::move(shape)}); };
  add("model.embed_tokens.weight", {c.vocab_size, h});
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h});
    for (const auto& [proj, rows] : {std::pair{"q", q}, std::pair{"k", kv}, std::pair{"v", kv}}) {
      add(p + "self_attn." + proj + "_proj.weight", {rows, h});
      if (kind.qkv_bias) add(p + "self_attn." + proj + "_proj.bias", {rows});
    }
    add(p + "self_attn.o_proj.weight", {h, q});
    if (kind.qk_norm) {
      add(p + "self_attn.q_norm.weight", {hd});
      add(p + "self_attn.k_norm.weight", {hd});
    }
    add(p + "post_attention_layernorm.weight", {h});
    add(p + "mlp.gate_proj.weight", {inter, h});
    add(p + "mlp.up_proj.weight", {inter, h});
    add(p + "mlp.down_proj.weight", {h, inter});
  }
  add("model.norm.weight", {h});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, h});
  return t;
}

}  // namespace minivllm::layers
