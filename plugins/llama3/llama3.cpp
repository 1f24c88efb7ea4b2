// LlamaForCausalLM (Llama 3.x): pre-norm decoder with GQA attention and a SiLU-gated MLP; RoPE
// frequencies rescaled by the config's "llama3" rope_scaling when present; lm_head tied to the
// embeddings or not, as the config says. Chat: Llama 3's header format.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <minivllm/chat_formats.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model.hpp>

namespace minivllm {
namespace {

using namespace layers;

std::vector<float> llama_rope_frequencies(const ModelConfig& c, const ConfigFields& fields) {
  auto inv_freq = rope_inverse_frequencies(c.head_dim, c.rope_theta);
  const std::optional<Llama3RopeScaling> scaling = read_llama3_rope_scaling(fields);
  return scaling ? llama3_scaled_frequencies(inv_freq, *scaling) : inv_freq;
}

class LlamaForCausalLM final : public Model {
 public:
  explicit LlamaForCausalLM(const ModelContext& context)
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
                        RmsNorm{}, RmsNorm{},  // no per-head q/k norm
                        PagedAttention{l, scale}},
          RmsNorm::load(w, p + "post_attention_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          GatedMlp::load(w, p + "mlp.", c.hidden_size, c.intermediate_size)});
    }
    decoder_.norm = RmsNorm::load(w, "model.norm.weight", c.hidden_size, c.rms_norm_eps);
    decoder_.lm_head = load_lm_head(w, c, decoder_.embed_tokens);
    decoder_.rotary = RotaryEmbedding::create(ops_, llama_rope_frequencies(c, context.fields));
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

class LlamaFamily final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"LlamaForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"llama"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, /*qkv_bias=*/false);
    read_llama3_rope_scaling(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, {});
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_llama3(chat_template) ? &chat_formats::llama3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    return std::make_unique<LlamaForCausalLM>(context);
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("llama3", registrar) { registrar.add(std::make_unique<minivllm::LlamaFamily>()); }
