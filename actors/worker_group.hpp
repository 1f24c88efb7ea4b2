#pragma once
// The workers of one engine behind one actor with the worker's protocol: the scheduler sends it
// each step, it fans the step out to every worker (one per device: the ranks of a
// tensor-parallel group) and gathers their answers. Ready: the workers' vocabulary (they must
// agree) and the fewest KV-cache blocks any holds, which sizes the engine's cache (each rank
// caches its own KV heads of the same blocks). A step: every worker's result, which must agree
// token for token (each rank samples the same gathered logits with the same seeds); the first
// worker's goes back. Any worker's failure fails the step, naming the worker.
#include <vector>

#include "actors/internal_messages.hpp"

namespace minivllm {

// `workers[i]` runs on `devices[i]` (for errors). A group of one is that worker itself: no hop.
// Linked to its workers: they stop together.
worker_actor spawn_worker_group(caf::actor_system& sys, std::vector<worker_actor> workers,
                                std::vector<int> devices);

}  // namespace minivllm
