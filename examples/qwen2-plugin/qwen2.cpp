// Qwen2ForCausalLM, built out of tree against the installed plugin SDK: a Llama-style decoder
// whose q/k/v projections have biases (o_proj has none), with plain RoPE and no q/k norm. Its
// tensors are random-v1's with biases; its chat format is the toolkit's Qwen3 ChatML when the
// tokenizer carries Qwen3's template (Qwen2's own adds a default system turn, not built here).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/chat_formats.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model.hpp>

namespace qwen2 {
namespace {

using namespace minivllm;
using namespace minivllm::layers;

class Qwen2ForCausalLM final : public Model {
 public:
  explicit Qwen2ForCausalLM(const ModelContext& context)
      : ops_(context.ops), heads_(AttentionHeads::of(context.config, context.weights)) {
    const ModelConfig& c = context.config;
    WeightLoader& w = context.weights;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
    decoder_.embed_tokens = load_embedding(w, c);
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      decoder_.layers.push_back(DecoderLayer{
          RmsNorm::load(w, p + "input_layernorm.weight", c.hidden_size, c.rms_norm_eps),
          SelfAttention{Linear::load_qkv(w, p + "self_attn.", c, /*bias=*/true),
                        Linear::load(w, p + "self_attn.o_proj.weight", c.hidden_size,
                                     c.num_attention_heads * c.head_dim, Split::row),
                        RmsNorm{}, RmsNorm{},  // no per-head q/k norm
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

class Qwen2Family final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"Qwen2ForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"qwen2"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, /*qkv_bias=*/true);
    require_plain_rope(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, {.qkv_bias = true});
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_qwen3(chat_template) ? &chat_formats::qwen3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    return std::make_unique<Qwen2ForCausalLM>(context);
  }
};

}  // namespace
}  // namespace qwen2

MINIVLLM_PLUGIN("qwen2", registrar) { registrar.add(std::make_unique<qwen2::Qwen2Family>()); }
