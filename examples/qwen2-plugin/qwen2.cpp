// Qwen2ForCausalLM, built out of tree against the installed plugin SDK: a Llama-style decoder
// whose q/k/v projections have biases (o_proj has none), with plain RoPE and no q/k norm. Its
// checkpoint is random-v1's with those biases. Chat: the toolkit's Qwen3 ChatML when the
// tokenizer carries Qwen3's template (Qwen2's own template adds a default system turn, which is
// not built, so it gets no format rather than a wrong one).
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

constexpr DecoderTensors kQwen2{.qkv_bias = true, .qk_norm = false};

class Qwen2Family final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override { return {"Qwen2ForCausalLM"}; }
  std::vector<std::string> model_types() const override { return {"qwen2"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, kQwen2.qkv_bias);
    require_plain_rope(fields);
  }
  std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& config,
                                                   const ConfigFields&) const override {
    return decoder_tensors(config, kQwen2);
  }
  ChatFormat chat_format(std::string_view chat_template) const override {
    return chat_formats::is_qwen3(chat_template) ? &chat_formats::qwen3 : nullptr;
  }
  std::unique_ptr<Model> create(const ModelContext& context) const override {
    const ModelConfig& c = context.config;
    return std::make_unique<DecoderModel>(context, kQwen2,
                                          rope_inverse_frequencies(c.head_dim, c.rope_theta));
  }
};

}  // namespace
}  // namespace qwen2

MINIVLLM_PLUGIN("qwen2", registrar) { registrar.add(std::make_unique<qwen2::Qwen2Family>()); }
