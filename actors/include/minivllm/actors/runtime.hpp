#pragma once
// Embedding the runtime in a caller's own caf::actor_system:
//
//   caf::actor_system_config cfg;
//   minivllm::add_runtime_types(cfg);          // message types and error renderer
//   minivllm::set_low_latency_scheduling(cfg); // optional: no polling sleeps in the step loop
//   caf::actor_system sys{cfg};
//   auto engine = minivllm::spawn_runtime(sys, minivllm::load_config(file, overrides));
//   self->request(engine, caf::infinite, request, sink).then([](minivllm::RequestOutput& out) {...});
//
// The engine answers each GenerateRequest with the final RequestOutput (finish_reason `abort`
// when aborted or shut down) or with an error naming what is wrong with the request; the sink
// (optional) gets the deltas as they come (RequestDelta: new tokens and text, whatever the
// request's output_kind; none for output_kind final_only). A requester that goes away has its
// requests aborted.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <minivllm/actors/messages.hpp>
#include <minivllm/config.hpp>

namespace minivllm {

struct RuntimeSpec;  // the runtime's own parts (actors/runtime_spec.hpp, not installed)

using engine_actor = caf::typed_actor<
    caf::replies_to<GenerateRequest, delta_sink>::with<RequestOutput>,
    // Aborts a request (its blocks are freed at the next step); false if unknown or done.
    caf::replies_to<abort_atom, std::string>::with<bool>,
    caf::replies_to<stats_atom>::with<EngineStats>,
    // The prompt token ids the engine would run for a request (its chat format and tokenizer),
    // or the error submitting it would give for its prompt.
    caf::replies_to<tokenize_atom, GenerateRequest>::with<std::vector<std::int32_t>>,
    // Aborts every request (each gets its final output), then stops every actor of the runtime.
    caf::reacts_to<shutdown_atom>>;

// Registers the runtime's message types and error renderer; call before building the system.
void add_runtime_types(caf::actor_system_config& cfg);

// Optional, before building the system: CAF's pooled threads, once out of work, skip their
// polling phase with 50 µs sleeps and wait on a condition variable, which the next message ends
// at once. Each decode step hands work between threads a few times; a 50 µs sleep (plus timer
// slack) in one of those hand-offs costs more than the step's own CPU work. Also caps the pool at
// 4 threads (fewer threads to wake on many-core hosts). The synchronous facade (LLM) does this
// for its own system.
void set_low_latency_scheduling(caf::actor_system_config& cfg);

// Spawns engine, scheduler and workers for the configuration's model (its tokenizer, config.json
// and plugin); waits until every worker has built its model runner and throws minivllm::Error
// if that failed.
engine_actor spawn_runtime(caf::actor_system& sys, const Config& config);
// The same from prepared parts (the tests give fake model runners this way).
engine_actor spawn_runtime(caf::actor_system& sys, RuntimeSpec spec);

// `minivllm worker`: one rank of an engine in another process (parallel.remote_workers). It
// connects to the engine at `engine` (retrying for `connect_timeout`: the engine may start
// later), proves the token in `token_file`, loads the rank the engine grants with the engine's
// configuration (`overrides` may set model.path, runtime.plugin_dirs and parallel.devices, the
// keys that differ between hosts), and serves it until the engine ends (returns) or its worker
// stops. Throws minivllm::Error: no engine there, the token refused, a bad override, the
// model not loading.
struct WorkerJoin {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::filesystem::path token_file;
  std::vector<std::string> overrides;
  std::chrono::seconds connect_timeout{60};
};
void run_worker(caf::actor_system& sys, const WorkerJoin& join);

// The text of an error the runtime answered with.
std::string error_text(caf::actor_system& sys, const caf::error& err);

// The engine's counters and where its time went (EngineStats), asked and waited for; throws
// minivllm::Error with the runtime's answer if the engine cannot give them.
EngineStats engine_stats(caf::actor_system& sys, const engine_actor& engine);

// Whether the engine refused a request for what it asked (its fields, its prompt): the client's
// error, not the runtime's.
bool is_request_refused(const caf::error& err);

// Whether the runtime failed because its device is lost (minivllm::DeviceLost: a CUDA error that
// poisoned the context). The engine then answers every request with such an error and stops;
// only a new process can use the device again.
bool is_device_lost(const caf::error& err);

// Whether the runtime refused or failed a request because a worker of its replica is lost (a
// remote worker that died or disconnected): the replica serves again once a worker joins in its
// place (`minivllm worker`).
bool is_worker_lost(const caf::error& err);

}  // namespace minivllm
