#include <minivllm/layers.hpp>

#include <minivllm/error.hpp>

#include <cmath>
#include <numbers>

namespace minivllm::layers {

Linear Linear::load(WeightLoader& loader, const std::string& name, std::int64_t out,
                    std::int64_t in, Split split) {
  return {loader.load(name, {out, in}, split)};
}

Linear Linear::load_qkv(WeightLoader& loader, const std::string& prefix,
                        const ModelConfig& config, bool bias) {
  const std::int64_t q_rows = config.num_attention_heads * config.head_dim;
  const std::int64_t kv_rows = config.num_key_value_heads * config.head_dim;
  const std::int64_t kv_pieces = AttentionHeads::of(config, loader).kv_pieces;
  // WeightPart names are views: the strings live through each call.
  Linear qkv;
  {
    const std::string q = prefix + "q_proj.weight", k = prefix + "k_proj.weight",
                      v = prefix + "v_proj.weight";
    qkv.weight = loader.load_stacked({{q, {q_rows, config.hidden_size}},
                                      {k, {kv_rows, config.hidden_size}, kv_pieces},
                                      {v, {kv_rows, config.hidden_size}, kv_pieces}});
  }
  if (bias) {
    const std::string q = prefix + "q_proj.bias", k = prefix + "k_proj.bias",
                      v = prefix + "v_proj.bias";
    qkv.bias = loader.load_stacked(
        {{q, {q_rows}}, {k, {kv_rows}, kv_pieces}, {v, {kv_rows}, kv_pieces}});
  }
  return qkv;
}

RmsNorm RmsNorm::load(WeightLoader& loader, const std::string& name, std::int64_t size,
                      double eps) {
  return {loader.load(name, {size}), static_cast<float>(eps)};
}

GatedMlp GatedMlp::load(WeightLoader& loader, const std::string& prefix, std::int64_t hidden,
                        std::int64_t intermediate) {
  return {{loader.load_stacked({{prefix + "gate_proj.weight", {intermediate, hidden}},
                               {prefix + "up_proj.weight", {intermediate, hidden}}})},
          Linear::load(loader, prefix + "down_proj.weight", hidden, intermediate, Split::row)};
}

AttentionHeads AttentionHeads::of(const ModelConfig& config, const WeightLoader& loader) {
  const std::int64_t n = loader.tp_size();
  const std::int64_t kv = config.num_key_value_heads;
  if (config.num_attention_heads % n != 0 || (kv % n != 0 && n % kv != 0))
    throw Error("tensor parallel size " + std::to_string(n) + " does not divide the " +
                std::to_string(config.num_attention_heads) +
                " attention heads, or neither divides nor is a multiple of the " +
                std::to_string(kv) + " key/value heads");
  if (kv % n == 0) return {config.num_attention_heads / n, kv / n, config.head_dim, n};
  return {config.num_attention_heads / n, 1, config.head_dim, kv};  // each kv head on n / kv ranks
}

std::vector<float> rope_inverse_frequencies(std::int64_t head_dim, double theta) {
  std::vector<float> inv_freq(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  return inv_freq;
}

std::vector<float> llama3_scaled_frequencies(const std::vector<float>& inv_freq,
                                             const Llama3RopeScaling& s) {
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  std::vector<float> scaled(inv_freq.size());
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / inv_freq[i];
    if (wavelen < high_freq_wavelen) {
      scaled[i] = inv_freq[i];  // high frequency: unchanged
    } else if (wavelen > low_freq_wavelen) {
      scaled[i] = static_cast<float>(inv_freq[i] / s.factor);  // low frequency: scaled
    } else {
      const double smooth =
          (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      scaled[i] = static_cast<float>((1 - smooth) * inv_freq[i] / s.factor + smooth * inv_freq[i]);
    }
  }
  return scaled;
}

RotaryEmbedding RotaryEmbedding::create(Ops& ops, const std::vector<float>& inv_freq) {
  return {ops.from_host(inv_freq.data(), DType::f32, {static_cast<std::int64_t>(inv_freq.size())})};
}

Tensor PagedAttention::operator()(Ops& ops, const Tensor& qkv, const RmsNorm& q_norm,
                                  const RmsNorm& k_norm, const RotaryEmbedding& rotary,
                                  KvCacheView& kv, const Batch& batch) const {
  auto& key_cache = kv.keys.at(static_cast<std::size_t>(layer));
  auto& value_cache = kv.values.at(static_cast<std::size_t>(layer));
  const Tensor q = ops.attention_inputs(qkv, q_norm.weight, k_norm.weight, q_norm.eps,
                                        rotary.inv_freq, key_cache, value_cache, batch);
  return ops.paged_attention(q, key_cache, value_cache, batch, scale);
}

Tensor Decoder::forward(Ops& ops, const Batch& batch, KvCacheView& kv) const {
  Tensor residual = embed_tokens(ops, batch);
  Tensor hidden = layers.front().input_layernorm(ops, residual);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const DecoderLayer& layer = layers[l];
    if (l > 0) hidden = layer.input_layernorm.add_and_norm(ops, hidden, residual);
    hidden = layer.self_attn(ops, hidden, rotary, kv, batch);
    hidden = layer.post_attention_layernorm.add_and_norm(ops, hidden, residual);
    hidden = layer.mlp(ops, hidden);
  }
  hidden = norm.add_and_norm(ops, hidden, residual);
  return logits(ops, lm_head, hidden, batch);
}

DecoderModel::DecoderModel(const ModelContext& context, const DecoderTensors& kind,
                           const std::vector<float>& inv_freq)
    : ops_(context.ops), heads_(AttentionHeads::of(context.config, context.weights)) {
  const ModelConfig& c = context.config;
  WeightLoader& w = context.weights;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  decoder_.embed_tokens = VocabEmbedding::load(w, c);
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    RmsNorm input_layernorm =
        RmsNorm::load(w, p + "input_layernorm.weight", c.hidden_size, c.rms_norm_eps);
    SelfAttention attention{
        Linear::load_qkv(w, p + "self_attn.", c, kind.qkv_bias),
        Linear::load(w, p + "self_attn.o_proj.weight", c.hidden_size,
                     c.num_attention_heads * c.head_dim, Split::row),
        {}, {}, PagedAttention{l, scale}};
    if (kind.qk_norm) {  // over head_dim, per head, before RoPE
      attention.q_norm = RmsNorm::load(w, p + "self_attn.q_norm.weight", c.head_dim, c.rms_norm_eps);
      attention.k_norm = RmsNorm::load(w, p + "self_attn.k_norm.weight", c.head_dim, c.rms_norm_eps);
    }
    decoder_.layers.push_back(DecoderLayer{
        std::move(input_layernorm), std::move(attention),
        RmsNorm::load(w, p + "post_attention_layernorm.weight", c.hidden_size, c.rms_norm_eps),
        GatedMlp::load(w, p + "mlp.", c.hidden_size, c.intermediate_size)});
  }
  decoder_.norm = RmsNorm::load(w, "model.norm.weight", c.hidden_size, c.rms_norm_eps);
  decoder_.lm_head = load_lm_head(w, c, decoder_.embed_tokens);
  decoder_.rotary = RotaryEmbedding::create(ops_, inv_freq);
}

VocabEmbedding VocabEmbedding::load(WeightLoader& loader, const ModelConfig& config) {
  VocabEmbedding e{loader.load("model.embed_tokens.weight", {config.vocab_size, config.hidden_size},
                               Split::column),
                   0, config.vocab_size};
  e.first_id = loader.tp_rank() * e.weight.dim(0);
  return e;
}

Linear load_lm_head(WeightLoader& loader, const ModelConfig& config,
                    const VocabEmbedding& embed_tokens) {
  if (config.tie_word_embeddings) return {embed_tokens.weight};
  return Linear::load(loader, "lm_head.weight", config.vocab_size, config.hidden_size,
                      Split::column);
}

Tensor logits(Ops& ops, const Linear& lm_head, const Tensor& hidden, const Batch& batch) {
  return ops.all_gather(lm_head(ops, ops.gather_rows(hidden, batch.logits_rows)));
}

}  // namespace minivllm::layers
