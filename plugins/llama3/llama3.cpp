// LlamaForCausalLM (Llama 3.x): a pre-norm decoder with GQA attention and a SiLU-gated MLP, no
// biases and no q/k norm; RoPE frequencies rescaled by the config's "llama3" rope_scaling when
// present; lm_head tied to the embeddings or not, as the config says. Chat: Llama 3's headers.
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

constexpr DecoderTensors kLlama{.qkv_bias = false, .qk_norm = false};

std::vector<float> llama_rope_frequencies(const ModelConfig& c, const ConfigFields& fields) {
  auto inv_freq = rope_inverse_frequencies(c.head_dim, c.rope_theta);
  const std::optional<Llama3RopeScaling> scaling = read_llama3_rope_scaling(fields);
  return scaling ? llama3_scaled_frequencies(inv_freq, *scaling) : inv_freq;
}

class LlamaFamily final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"LlamaForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"llama"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, kLlama.qkv_bias);
    read_llama3_rope_scaling(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, kLlama);
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_llama3(chat_template) ? &chat_formats::llama3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    return std::make_unique<DecoderModel>(context, kLlama,
                                          llama_rope_frequencies(context.config, context.fields));
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("llama3", registrar) { registrar.add(std::make_unique<minivllm::LlamaFamily>()); }
