#pragma once
// Building blocks of Llama-family decoders, shared by the model plugins: each is a few weights and
// the ops that apply them. Plugins link them statically (mv_layers); they call the runtime only
// through Ops and WeightLoader.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <minivllm/batch.hpp>
#include <minivllm/config_fields.hpp>
#include <minivllm/kv_cache.hpp>
#include <minivllm/model.hpp>
#include <minivllm/model_config.hpp>
#include <minivllm/ops.hpp>
#include <minivllm/weights.hpp>

namespace minivllm::layers {

// ---- config.json: what these layers build, and the refusal of what they do not ----

// rope_scaling of type "llama3" (Llama 3.1+): frequency-dependent scaling of the RoPE bands.
struct Llama3RopeScaling {
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 1.0;
  std::int64_t original_max_position_embeddings = 0;
};

// Refuses what a decoder of these layers does not build: hidden_act other than "silu",
// mlp_bias, a sliding window (use_sliding_window, or a sliding_window without it), and an
// attention_bias other than `qkv_bias` (the family's q/k/v projections have biases or not).
void check_decoder_config(const ConfigFields& fields, bool qkv_bias);
// config.json's rope_scaling: nullopt when absent or null, the parsed "llama3" kind, or an
// error naming the field for any other kind or a bad value.
std::optional<Llama3RopeScaling> read_llama3_rope_scaling(const ConfigFields& fields);
// Refuses any rope_scaling (a family with plain RoPE only).
void require_plain_rope(const ConfigFields& fields);

// The tensors of a Llama-style checkpoint in random-v1 order: the embedding; per layer the input
// norm, q/k/v projections (each followed by its bias with `qkv_bias`), o_proj, q_norm and k_norm
// (with `qk_norm`), the post-attention norm and the gated MLP; the final norm; lm_head unless tied.
struct DecoderTensors {
  bool qkv_bias = false;
  bool qk_norm = false;
};
std::vector<CheckpointTensor> decoder_tensors(const ModelConfig& config, const DecoderTensors& kind);

// ---- building blocks ----

// y = x @ weight^T (+ bias), weight [out, in] (possibly this rank's split of it); an undefined
// bias is none. A row-parallel Linear's y is this rank's partial sum: the caller all-reduces it.
struct Linear {
  Tensor weight;
  Tensor bias;

  static Linear load(WeightLoader& loader, const std::string& name, std::int64_t out,
                     std::int64_t in, Split split = Split::none);
  // `<prefix>q_proj.weight`, `k_proj` and `v_proj` stacked into one column-parallel weight
  // [(heads + 2 * kv_heads) * head_dim, hidden] (this rank's heads of each: AttentionHeads);
  // with `bias`, their `.bias` vectors stacked the same way.
  static Linear load_qkv(WeightLoader& loader, const std::string& prefix,
                         const ModelConfig& config, bool bias = false);
  Tensor operator()(Ops& ops, const Tensor& x) const {
    Tensor y = ops.linear(x, weight);
    if (bias.defined()) ops.add_bias(y, bias);
    return y;
  }
};

// A default-constructed RmsNorm (undefined weight) stands for "no norm" where one is optional.
struct RmsNorm {
  Tensor weight;
  float eps = 1e-6f;

  static RmsNorm load(WeightLoader& loader, const std::string& name, std::int64_t size,
                      double eps);
  Tensor operator()(Ops& ops, const Tensor& x) const { return ops.rms_norm(x, weight, eps); }
  // residual += x, then the norm of the updated residual stream.
  Tensor add_and_norm(Ops& ops, const Tensor& x, Tensor& residual) const {
    return ops.add_rms_norm(x, residual, weight, eps);
  }
};

// down(silu(gate(x)) * up(x)), gate and up as one GEMM with the activation
// (Ops::linear_silu_and_mul); loads `<prefix>gate_proj.weight` and `<prefix>up_proj.weight`
// stacked into one column-parallel weight, and `<prefix>down_proj.weight` row-parallel (its
// output all-reduced over the ranks).
struct GatedMlp {
  Linear gate_up_proj, down_proj;

  static GatedMlp load(WeightLoader& loader, const std::string& prefix, std::int64_t hidden,
                       std::int64_t intermediate);
  Tensor operator()(Ops& ops, const Tensor& x) const {
    Tensor y = down_proj(ops, ops.linear_silu_and_mul(x, gate_up_proj.weight));
    ops.all_reduce(y);
    return y;
  }
};

// Attention head counts on this tensor-parallel rank.
struct AttentionHeads {
  std::int64_t num_heads = 0;     // query heads
  std::int64_t num_kv_heads = 0;  // key/value heads (GQA: fewer)
  std::int64_t head_dim = 0;
  // The pieces the checkpoint's k/v projections split into (WeightPart::pieces): one per rank,
  // or one per key/value head when the ranks outnumber those (each then on ranks / kv_heads
  // ranks, as vLLM replicates them).
  std::int64_t kv_pieces = 1;

  // From the config, split over the loader's tensor-parallel ranks; throws minivllm::Error when
  // the ranks divide neither the query heads nor (or into) the key/value heads.
  static AttentionHeads of(const ModelConfig& config, const WeightLoader& loader);
  std::int64_t q_width() const { return num_heads * head_dim; }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
};

// RoPE inverse frequencies 1 / theta^(2i / head_dim), i < head_dim / 2, as Hugging Face computes
// them (fp32).
std::vector<float> rope_inverse_frequencies(std::int64_t head_dim, double theta);
// Llama 3's "llama3" rope scaling of those frequencies (HF _compute_llama3_parameters): long
// wavelengths divided by `factor`, short ones kept, the band between interpolated smoothly.
std::vector<float> llama3_scaled_frequencies(const std::vector<float>& inv_freq,
                                             const Llama3RopeScaling& scaling);

struct RotaryEmbedding {
  Tensor inv_freq;  // f32 [head_dim / 2] on the ops' device

  static RotaryEmbedding create(Ops& ops, const std::vector<float>& inv_freq);
};

// One layer's attention over the paged cache, from its fused q/k/v projection: the q and k heads
// normed per head (q_norm / k_norm; default-constructed for none) and rotated, k and v stored in
// the cache (Ops::attention_inputs), then causal attention.
struct PagedAttention {
  std::int64_t layer = 0;  // index into the KvCacheView
  float scale = 1.0f;

  Tensor operator()(Ops& ops, const Tensor& qkv, const RmsNorm& q_norm, const RmsNorm& k_norm,
                    const RotaryEmbedding& rotary, KvCacheView& kv, const Batch& batch) const;
};

// A Llama-style layer's self-attention: the fused q/k/v projection (with biases or not;
// column-parallel over the heads), the per-head q/k norms (default-constructed: none), RoPE and
// the paged attention, then o_proj (row-parallel, its output all-reduced over the ranks).
struct SelfAttention {
  Linear qkv_proj, o_proj;
  RmsNorm q_norm, k_norm;
  PagedAttention attention;

  Tensor operator()(Ops& ops, const Tensor& x, const RotaryEmbedding& rotary, KvCacheView& kv,
                    const Batch& batch) const {
    Tensor y = o_proj(ops, attention(ops, qkv_proj(ops, x), q_norm, k_norm, rotary, kv, batch));
    ops.all_reduce(y);
    return y;
  }
};

// A pre-norm decoder layer: x + attn(norm(x)), then h + mlp(norm(h)).
struct DecoderLayer {
  RmsNorm input_layernorm;
  SelfAttention self_attn;
  RmsNorm post_attention_layernorm;
  GatedMlp mlp;
};

// The token embedding table, vocab-parallel: this rank's rows hold token ids [first_id,
// first_id + rows) of vocab_size (all of them without tensor parallelism). A lookup sums the
// ranks' rows, of which one is the token's and the others zero.
struct VocabEmbedding {
  Tensor weight;
  std::int64_t first_id = 0;
  std::int64_t vocab_size = 0;

  // model.embed_tokens.weight, this rank's run of the vocabulary.
  static VocabEmbedding load(WeightLoader& loader, const ModelConfig& config);
  Tensor operator()(Ops& ops, const Batch& batch) const {
    Tensor x = ops.embedding(weight, batch, first_id, vocab_size);
    ops.all_reduce(x);
    return x;
  }
};

// The decoder's step: token embeddings through `layers` (each residual add fused into the next
// norm), the final norm, then the logits of batch.logits_rows.
struct Decoder {
  VocabEmbedding embed_tokens;
  std::vector<DecoderLayer> layers;
  RmsNorm norm;
  Linear lm_head;
  RotaryEmbedding rotary;

  Tensor forward(Ops& ops, const Batch& batch, KvCacheView& kv) const;
  // Layers, and this rank's KV heads of each, for the KV cache.
  KvCacheSpec kv_cache_spec(const AttentionHeads& heads) const {
    return {static_cast<std::int64_t>(layers.size()), heads.num_kv_heads, heads.head_dim};
  }
};

// A Llama-style decoder model as Hugging Face names it (model.embed_tokens, model.layers.{l}.
// input_layernorm / self_attn.{q,k,v,o}_proj (q/k/v biases with kind.qkv_bias) / self_attn.
// {q,k}_norm (with kind.qk_norm) / post_attention_layernorm / mlp.{gate,up,down}_proj,
// model.norm, lm_head unless tied): the tensors of decoder_tensors(config, kind), loaded, and
// RoPE at `inv_freq`. A family whose model is one of these only says which kind.
class DecoderModel final : public Model {
 public:
  DecoderModel(const ModelContext& context, const DecoderTensors& kind,
               const std::vector<float>& inv_freq);
  KvCacheSpec kv_cache_spec() const override { return decoder_.kv_cache_spec(heads_); }
  Tensor forward(const Batch& batch, KvCacheView& kv) override {
    return decoder_.forward(ops_, batch, kv);
  }

 private:
  Ops& ops_;
  AttentionHeads heads_;
  Decoder decoder_;
};

// The output projection, vocab-parallel like the embedding: lm_head.weight, or the embedding
// table when the config ties them.
Linear load_lm_head(WeightLoader& loader, const ModelConfig& config,
                    const VocabEmbedding& embed_tokens);

// The logits of batch.logits_rows: lm_head applied to those rows of the final hidden states,
// each rank's run of the vocabulary gathered into whole rows.
Tensor logits(Ops& ops, const Linear& lm_head, const Tensor& hidden, const Batch& batch);

}  // namespace minivllm::layers
