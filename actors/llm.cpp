#include <minivllm/llm.hpp>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

namespace minivllm {
namespace {

caf::actor_system_config& configured(caf::actor_system_config& cfg) {
  add_runtime_types(cfg);
  set_low_latency_scheduling(cfg);
  return cfg;
}

std::vector<RequestOutput> outputs_or_throw(std::vector<GenerateResult> results) {
  std::vector<RequestOutput> outputs;
  for (GenerateResult& r : results) {
    if (!r.ok()) throw Error(r.error);
    outputs.push_back(std::move(r.output));
  }
  return outputs;
}

}  // namespace

struct LLM::Impl {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  engine_actor engine;

  explicit Impl(RuntimeSpec spec) : sys(configured(cfg)), engine(spawn_runtime(sys, std::move(spec))) {}
  ~Impl() { caf::anon_send(engine, shutdown_atom_v); }
};

LLM::LLM(const Config& config) : LLM(runtime_spec(config)) {}
LLM::LLM(RuntimeSpec spec) : impl_(std::make_unique<Impl>(std::move(spec))) {}
LLM::~LLM() = default;

std::vector<GenerateResult> LLM::generate(std::vector<GenerateRequest> requests,
                                          const std::function<void(std::size_t)>& progress) {
  caf::scoped_actor self{impl_->sys};
  using handle = decltype(self->request(impl_->engine, caf::infinite, GenerateRequest{}, delta_sink{}));
  std::vector<handle> pending;
  pending.reserve(requests.size());
  for (GenerateRequest& r : requests)
    pending.push_back(self->request(impl_->engine, caf::infinite, std::move(r), delta_sink{}));
  std::vector<GenerateResult> results(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    pending[i].receive([&](RequestOutput& out) { results[i].output = std::move(out); },
                       [&](caf::error& err) { results[i].error = error_text(impl_->sys, err); });
    if (progress) progress(i + 1);
  }
  return results;
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::string>& prompts,
                                         const SamplingParams& params) {
  std::vector<GenerateRequest> requests(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    requests[i].prompt = prompts[i];
    requests[i].params = params;
  }
  return outputs_or_throw(generate(std::move(requests)));
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::vector<std::int32_t>>& prompts,
                                         const SamplingParams& params) {
  std::vector<GenerateRequest> requests(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    requests[i].prompt_token_ids = prompts[i];
    requests[i].params = params;
  }
  return outputs_or_throw(generate(std::move(requests)));
}

EngineStats LLM::stats() {
  caf::scoped_actor self{impl_->sys};
  EngineStats stats;
  self->request(impl_->engine, caf::infinite, stats_atom_v)
      .receive([&](EngineStats& s) { stats = std::move(s); },
               [&](caf::error& err) { throw Error(error_text(impl_->sys, err)); });
  return stats;
}

}  // namespace minivllm
