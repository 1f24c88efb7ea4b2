#pragma once
// The engine: the runtime's front door. Turns a GenerateRequest into prompt token ids (chat
// format, tokenizer), refuses bad requests with a clear error, hands good ones to the scheduler,
// streams deltas to each request's sink, answers each request with its final output, and aborts
// the requests of a requester that goes away.
#include "actors/remote_messages.hpp"
#include <minivllm/actors/runtime.hpp>

namespace minivllm {

// The engine's full interface: the public one plus the scheduler's step outputs and, from the
// join door, a replica's lost worker (replica, why), which it passes on to that replica's
// scheduler at once, busy or idle.
using engine_impl_actor = engine_actor::extend<caf::reacts_to<StepOutputs>,
                                               caf::reacts_to<lost_atom, std::int32_t, std::string>>;

// Spawns the engine and one scheduler per data-parallel replica, each driving its worker group
// of `replicas` (all linked: they stop together). With several replicas the engine routes each
// request (ReplicaRouter) and sums their stats.
engine_actor spawn_engine(caf::actor_system& sys, const RuntimeSpec& spec, std::int32_t vocab_size,
                          std::vector<worker_actor> replicas);

}  // namespace minivllm
