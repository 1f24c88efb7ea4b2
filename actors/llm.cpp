#include <minivllm/llm.hpp>

#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

#include "actors/runtime_spec.hpp"

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

// Calls a generate call's on_delta for each delta, and counts the finished completions so that
// generate can wait for the last of them (a delta may arrive after its request's answer).
struct DeltaRelay {
  std::function<void(const RequestDelta&)> on_delta;
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t finished = 0;

  void wait_finished(std::size_t count) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return finished >= count; });
  }
};

delta_sink spawn_relay(caf::actor_system& sys, std::shared_ptr<DeltaRelay> relay) {
  // A spawn argument, not a capture: CAF 0.17 spawns a function without arguments differently.
  return sys.spawn(
      [](delta_sink::pointer, std::shared_ptr<DeltaRelay> relay) -> delta_sink::behavior_type {
        return {[relay](RequestDelta& d) {
          relay->on_delta(d);
          if (!d.finished) return;
          {
            std::lock_guard lock(relay->mutex);
            ++relay->finished;
          }
          relay->changed.notify_all();
        }};
      },
      std::move(relay));
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
                                          const std::function<void(std::size_t)>& progress,
                                          const std::function<void(const RequestDelta&)>& on_delta) {
  caf::scoped_actor self{impl_->sys};
  std::shared_ptr<DeltaRelay> relay;
  delta_sink sink;
  if (on_delta) {
    relay = std::make_shared<DeltaRelay>();
    relay->on_delta = on_delta;
    sink = spawn_relay(impl_->sys, relay);
  }
  using handle = decltype(self->request(impl_->engine, caf::infinite, GenerateRequest{}, delta_sink{}));
  std::vector<handle> pending;
  pending.reserve(requests.size());
  for (GenerateRequest& r : requests)
    pending.push_back(self->request(impl_->engine, caf::infinite, std::move(r), sink));
  std::vector<GenerateResult> results(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    pending[i].receive([&](RequestOutput& out) { results[i].output = std::move(out); },
                       [&](caf::error& err) { results[i].error = error_text(impl_->sys, err); });
    if (progress) progress(i + 1);
  }
  if (relay) {
    std::size_t completions = 0;  // each answered one sent a finished delta
    for (const GenerateResult& r : results)
      if (r.ok()) completions += r.output.outputs.size();
    relay->wait_finished(completions);
    caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
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

EngineStats LLM::stats() { return engine_stats(impl_->sys, impl_->engine); }

}  // namespace minivllm
