#pragma once
// The workers of one engine replica behind one actor with the worker's protocol: the scheduler
// sends it each step, it fans the step out to every worker (one per rank of a tensor-parallel
// group) and gathers their answers. Ready: the workers' vocabulary (they must agree) and the
// fewest KV-cache blocks any holds, which sizes the engine's cache (each rank caches its own KV
// heads of the same blocks). A step: every worker's result, which must agree token for token
// (each rank samples the same gathered logits with the same seeds); the first worker's goes
// back. Any worker's failure fails the step, naming the worker.
//
// Members in other processes (`minivllm worker`) may be lost: the join door reports it
// (lost_atom), the steps at the group fail with a worker_lost error naming the worker, and so
// does every step until a worker joins in its place (a GroupMember) and answers ready with the
// same vocabulary and enough blocks; restore_atom is answered then.
#include <vector>

#include "actors/remote_messages.hpp"

namespace minivllm {

// `members[i]` is rank i. A group of one local worker is that worker itself: no hop. Linked to
// its local workers: they stop together; remote ones are stopped with it (their process exits).
// `hub`: the replica's collectives hub (cpu backend with remote ranks; else null), told when a
// rank is lost and when the group is whole again.
worker_actor spawn_worker_group(caf::actor_system& sys, std::vector<GroupMember> members,
                                collective_hub_actor hub = {});

}  // namespace minivllm
