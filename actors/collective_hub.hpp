#pragma once
// The CPU backend's collectives for a replica whose ranks run in more than one process (remote
// workers): every rank, local or remote, sends its part to one hub actor in the engine's
// process, which answers each with the result once all are in. Sums in rank order, as
// CpuCollectives: the same bits as in one process. The reference path, not a fast one: a CUDA
// group always uses NCCL.
#include <chrono>
#include <memory>

#include "actors/remote_messages.hpp"
#include "backend/host_collectives.hpp"

namespace minivllm {

collective_hub_actor spawn_collective_hub(caf::actor_system& sys, int ranks);

// A rank's side of the hub, for its CpuOps: each call waits for the hub's answer at most
// `timeout` (runtime.step_timeout_s). Usable from any thread.
std::shared_ptr<HostCollectives> hub_collectives(caf::actor_system& sys, collective_hub_actor hub,
                                                 int ranks, std::chrono::milliseconds timeout);

}  // namespace minivllm
