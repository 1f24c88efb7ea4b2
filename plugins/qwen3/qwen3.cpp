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

class Qwen3ForCausalLM final : public Model {
 public:
  explicit Qwen3ForCausalLM(const ModelContext& context)
      : ops_(context.ops), heads_(AttentionHeads::of(context.config, context.weights)) {
    const ModelConfig& c = context.config;
    WeightLoader& w = context.weights;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
    decoder_.embed_tokens = load_embedding(w, c);
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      decoder_.layers.push_back(DecoderLayer{
          RmsNorm::load(w, p + "input_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          SelfAttention{Linear::load_qkv(w, p + "self_attn.", c),
                        Linear::load(w, p + "self_attn.o_proj.weight", c.hidden_size,
                                     c.num_attention_heads * c.head_dim, Split::row),
                        // over head_dim, per head, before RoPE
                        RmsNorm::load(w, p + "self_attn.q_norm.weight", c.head_dim, c.rms_norm_eps),
                        RmsNorm::load(w, p + "self_attn.k_norm.weight", c.head_dim, c.rms_norm_eps),
                        PagedAttention{l, scale}},
          RmsNorm::load(w, p + "post_attention_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          GatedMlp::load(w, p + "mlp.", c.hidden_size, c.intermediate_size)});
    }
    decoder_.norm = RmsNorm::load(w, "model.norm.weight", c.hidden_size, c.rms_norm_eps);
    decoder_.lm_head = load_lm_head(w, c, decoder_.embed_tokens);
    decoder_.rotary = RotaryEmbedding::create(ops_, rope_inverse_frequencies(c.head_dim, c.rope_theta));
  }

  KvCacheSpec kv_cache_spec() const override { return decoder_.kv_cache_spec(heads_); }
  Tensor forward(const Batch& batch, KvCacheView& kv) override {
    return decoder_.forward(ops_, batch, kv);
  }

 private:
  Ops& ops_;
  AttentionHeads heads_;
  Decoder decoder_;
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
    return chat_formats::is_qwen3(chat_template) ? &chat_formats::qwen3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    return std::make_unique<Qwen3ForCausalLM>(context);
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("qwen3", registrar) { registrar.add(std::make_unique<minivllm::Qwen3Family>()); }
