// Qwen3ForCausalLM: a Llama-style decoder whose attention RMS-normalizes each query and key head
// (q_norm, k_norm) before RoPE. head_dim comes from the config, so q_proj may be wider than hidden.
// Plain RoPE; chat: ChatML as Qwen3's template renders it.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/chat_formats.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model.hpp>

namespace minivllm {
namespace {

using namespace layers;

struct Qwen3Attention {
  Linear qkv_proj, o_proj;
  RmsNorm q_norm, k_norm;  // over head_dim, per head, before RoPE
  PagedAttention attention;
};

struct Qwen3DecoderLayer {
  RmsNorm input_layernorm;
  Qwen3Attention self_attn;
  RmsNorm post_attention_layernorm;
  GatedMlp mlp;
};

class Qwen3ForCausalLM final : public Model {
 public:
  explicit Qwen3ForCausalLM(const ModelContext& context)
      : ops_(context.ops), heads_(AttentionHeads::of(context.config, context.weights)) {
    const ModelConfig& c = context.config;
    WeightLoader& w = context.weights;
    embed_tokens_ = load_embedding(w, c);
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      layers_.push_back(Qwen3DecoderLayer{
          RmsNorm::load(w, p + "input_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          Qwen3Attention{
              Linear::load_qkv(w, p + "self_attn.", c),
              Linear::load(w, p + "self_attn.o_proj.weight", c.hidden_size,
                           c.num_attention_heads * c.head_dim, Split::row),
              RmsNorm::load(w, p + "self_attn.q_norm.weight", c.head_dim, c.rms_norm_eps),
              RmsNorm::load(w, p + "self_attn.k_norm.weight", c.head_dim, c.rms_norm_eps),
              PagedAttention{l, static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)))}},
          RmsNorm::load(w, p + "post_attention_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          GatedMlp::load(w, p + "mlp.", c.hidden_size, c.intermediate_size)});
    }
    norm_ = RmsNorm::load(w, "model.norm.weight", c.hidden_size, c.rms_norm_eps);
    lm_head_ = load_lm_head(w, c, embed_tokens_);
    rotary_ = RotaryEmbedding::create(ops_, rope_inverse_frequencies(c.head_dim, c.rope_theta));
  }

  KvCacheSpec kv_cache_spec() const override {
    return {static_cast<std::int64_t>(layers_.size()), heads_.num_kv_heads, heads_.head_dim};
  }

  Tensor forward(const Batch& batch, KvCacheView& kv) override {
    Tensor residual = ops_.embedding(embed_tokens_, batch);
    Tensor hidden = layers_.front().input_layernorm(ops_, residual);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Qwen3DecoderLayer& layer = layers_[l];
      if (l > 0) hidden = layer.input_layernorm.add_and_norm(ops_, hidden, residual);
      hidden = attention(layer.self_attn, hidden, kv, batch);
      hidden = layer.post_attention_layernorm.add_and_norm(ops_, hidden, residual);
      hidden = layer.mlp(ops_, hidden);
    }
    hidden = norm_.add_and_norm(ops_, hidden, residual);
    return logits(ops_, lm_head_, hidden, batch);
  }

 private:
  Tensor attention(const Qwen3Attention& a, const Tensor& x, KvCacheView& kv, const Batch& batch) {
    const Tensor qkv = a.qkv_proj(ops_, x);
    return a.o_proj(ops_, a.attention(ops_, qkv, a.q_norm, a.k_norm, rotary_, kv, batch));
  }

  Ops& ops_;
  AttentionHeads heads_;
  Tensor embed_tokens_;
  std::vector<Qwen3DecoderLayer> layers_;
  RmsNorm norm_;
  Linear lm_head_;
  RotaryEmbedding rotary_;
};

class Qwen3Family final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"Qwen3ForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"qwen3"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, /*qkv_bias=*/false);
    require_plain_rope(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, {.qk_norm = true});
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_chatml(chat_template) ? &chat_formats::qwen3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    return std::make_unique<Qwen3ForCausalLM>(context);
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("qwen3", registrar) { registrar.add(std::make_unique<minivllm::Qwen3Family>()); }
