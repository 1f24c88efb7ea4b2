// Qwen3ForCausalLM: a Llama-style decoder whose attention RMS-normalizes each query and key head
// (q_norm, k_norm) before RoPE; head_dim comes from the config, so q_proj may be wider than
// hidden. Plain RoPE, no biases; chat: ChatML as Qwen3's template renders it.
#include <memory>
#include <string>
#include <vector>

#include <minivllm/chat_formats.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model.hpp>

namespace minivllm {
namespace {

using namespace layers;

constexpr DecoderTensors kQwen3{.qkv_bias = false, .qk_norm = true};

class Qwen3Family final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"Qwen3ForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"qwen3"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, kQwen3.qkv_bias);
    require_plain_rope(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, kQwen3);
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_qwen3(chat_template) ? &chat_formats::qwen3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    const ModelConfig& c = context.config;
    return std::make_unique<DecoderModel>(context, kQwen3,
                                          rope_inverse_frequencies(c.head_dim, c.rope_theta));
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("qwen3", registrar) { registrar.add(std::make_unique<minivllm::Qwen3Family>()); }
