// The fault hook, test builds only: a model family that is Qwen3 with faults on cue, built into
// the test tree and never installed. A model folder opts in through its config.json:
//   "architectures": ["FaultInjectingQwen3ForCausalLM"], "model_type": "qwen3_fault_injecting",
//   "fault_throw_token_id": T   a step whose batch holds token T throws (as a failing kernel
//                               launch or a bad tensor would), every step it is in;
//   "fault_hang_token_id": H,   a step whose batch holds token H stops answering for
//   "fault_hang_seconds": S     S seconds (a wedged device or a deadlocked collective);
//   "fault_device_lost_token_id": L   a step with token L throws minivllm::DeviceLost, as the
//                               CUDA backend does once an error poisoned its context;
//   "fault_cuda_error_token_id": C    on the CUDA backend, a step with token C launches a
//                               kernel with too many threads a block (an error that leaves the
//                               context usable), checked as the backend checks its launches;
//   "fault_cuda_illegal_address_token_id": A   on the CUDA backend, a step with token A runs a
//                               kernel that writes through a null pointer (the context is lost),
//                               then the model's own ops, whose checks meet the error.
// The triggers are prompt tokens, so a test picks exactly which requests meet the fault.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <minivllm/chat_formats.hpp>
#include <minivllm/error.hpp>
#include <minivllm/layers.hpp>
#include <minivllm/model.hpp>

#include "cuda_faults.hpp"

namespace minivllm {
namespace {

using namespace layers;

constexpr DecoderTensors kQwen3{.qkv_bias = false, .qk_norm = true};

struct FaultCues {
  std::int64_t throw_token_id = -1;  // -1: none
  std::int64_t hang_token_id = -1;
  double hang_seconds = 0;
  std::int64_t device_lost_token_id = -1;
  std::int64_t cuda_error_token_id = -1;
  std::int64_t cuda_illegal_address_token_id = -1;

  static FaultCues of(const ConfigFields& fields) {
    return {fields.integer("fault_throw_token_id", -1),
            fields.integer("fault_hang_token_id", -1),
            fields.number("fault_hang_seconds", 0),
            fields.integer("fault_device_lost_token_id", -1),
            fields.integer("fault_cuda_error_token_id", -1),
            fields.integer("fault_cuda_illegal_address_token_id", -1)};
  }
};

class FaultInjectingModel final : public Model {
 public:
  FaultInjectingModel(std::unique_ptr<Model> model, FaultCues cues)
      : model_(std::move(model)), cues_(cues) {}

  KvCacheSpec kv_cache_spec() const override { return model_->kv_cache_spec(); }

  Tensor forward(const Batch& batch, KvCacheView& kv) override {
    // A cue of -1 is none, and a step's token ids are negative where a row is fed the token the
    // step before samples on the device (the look-ahead): those match no cue.
    for (std::int32_t id : batch.token_ids) {
      if (id < 0) continue;
      if (id == cues_.throw_token_id)
        throw Error("injected fault: a step with token " + std::to_string(id) + " threw");
      if (id == cues_.device_lost_token_id)
        throw DeviceLost("injected fault: a step with token " + std::to_string(id) +
                         " lost the device");
      if (id == cues_.cuda_error_token_id) launch_with_invalid_configuration();
      if (id == cues_.cuda_illegal_address_token_id) {
        write_through_null_pointer();
        break;
      }
      if (id == cues_.hang_token_id) {
        std::this_thread::sleep_for(std::chrono::duration<double>(cues_.hang_seconds));
        break;
      }
    }
    return model_->forward(batch, kv);
  }

 private:
  std::unique_ptr<Model> model_;
  FaultCues cues_;
};

class FaultInjectingQwen3Family final : public ModelFamily {
 public:
  std::vector<std::string> architectures() const override {
    return {"FaultInjectingQwen3ForCausalLM"};
  }
  std::vector<std::string> model_types() const override { return {"qwen3_fault_injecting"}; }
  void check_config(const ModelConfig&, const ConfigFields& fields) const override {
    check_decoder_config(fields, kQwen3.qkv_bias);
    require_plain_rope(fields);
    if (FaultCues::of(fields).hang_seconds < 0)
      fields.fail("fault_hang_seconds", "must be at least 0");
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
    return std::make_unique<FaultInjectingModel>(
        std::make_unique<DecoderModel>(context, kQwen3,
                                       rope_inverse_frequencies(c.head_dim, c.rope_theta)),
        FaultCues::of(context.fields));
  }
};

}  // namespace
}  // namespace minivllm

MINIVLLM_PLUGIN("fault_injecting", registrar) {
  registrar.add(std::make_unique<minivllm::FaultInjectingQwen3Family>());
}
