#pragma once
// What crosses between an engine and the `minivllm worker` processes that join it (CAF's network
// layer, BASP): the join handshake, and the CPU backend's collectives through the engine's hub;
// and the messages about a group's members inside the engine. Typed messages only; nothing
// executable. Not part of the embedding API.
#include <cstdint>
#include <string>
#include <vector>

#include <caf/scheduled_actor.hpp>

#include "actors/internal_messages.hpp"

namespace minivllm {

// One rank's part of a collective (HostCollectives): its step boundary, or its tensor for an
// all-reduce or all-gather. The hub answers with the result (empty for a step boundary).
enum class CollectiveKind : std::uint8_t { begin_step = 0, all_reduce = 1, all_gather = 2 };

struct CollectiveCall {
  std::uint8_t kind = 0;  // CollectiveKind
  std::int32_t rank = 0;
  std::vector<float> data;
  std::int64_t rows = 0;  // all_gather: data is [rows, cols]
  std::int64_t cols = 0;
};

// worker -> engine, second: the engine's nonce with its HMAC under the join token.
struct JoinProof {
  std::string nonce;
  std::string proof;  // hex HMAC-SHA256(token, nonce)
  std::string name;   // "pid 123 on host-a", for the engine's logs and errors
  caf::actor joiner;  // the worker process's session: its loss frees the rank it was given
};

// engine -> a worker that proved the token: its rank and what it needs to load it.
struct JoinGrant {
  std::string ticket;       // names the rank when the loaded worker reports back
  std::string config_toml;  // the engine's configuration, as the worker's process sees it
  std::int32_t replica = 0;
  std::int32_t rank = 0;
  std::int32_t ranks = 1;  // of the replica's tensor-parallel group
  std::vector<std::int32_t> eos_token_ids;
  std::string nccl_id;  // the group's ncclUniqueId bytes (cuda backend)
  caf::actor hub;       // the group's collectives (cpu backend, ranks > 1)
};

// worker -> engine, last: its loaded worker actor for the granted rank.
struct JoinedWorker {
  std::string ticket;
  worker_actor worker;
};

// A rank of a worker group and who runs it, for errors.
struct GroupMember {
  std::int32_t rank = 0;
  worker_actor worker;
  std::string name;  // "worker rank 1 (device 0)" or "... (remote: pid 123 on host-a)"
};

struct GroupMembers {
  std::vector<GroupMember> members;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CollectiveCall& x) {
  return f(caf::meta::type_name("minivllm::CollectiveCall"), x.kind, x.rank, x.data, x.rows,
           x.cols);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinProof& x) {
  return f(caf::meta::type_name("minivllm::JoinProof"), x.nonce, x.proof, x.name, x.joiner);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinGrant& x) {
  return f(caf::meta::type_name("minivllm::JoinGrant"), x.ticket, x.config_toml, x.replica,
           x.rank, x.ranks, x.eos_token_ids, x.nccl_id, x.hub);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinedWorker& x) {
  return f(caf::meta::type_name("minivllm::JoinedWorker"), x.ticket, x.worker);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GroupMember& x) {
  return f(caf::meta::type_name("minivllm::GroupMember"), x.rank, x.worker, x.name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GroupMembers& x) {
  return f(caf::meta::type_name("minivllm::GroupMembers"), x.members);
}

}  // namespace minivllm

CAF_BEGIN_TYPE_ID_BLOCK(minivllm_remote, caf::id_block::minivllm_internal::end)
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::CollectiveCall))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::JoinProof))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::JoinGrant))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::JoinedWorker))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::GroupMember))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::GroupMembers))
  CAF_ADD_TYPE_ID(minivllm_remote, (minivllm::worker_actor))
  CAF_ADD_TYPE_ID(minivllm_remote, (std::vector<float>))
  CAF_ADD_TYPE_ID(minivllm_remote, (std::vector<minivllm::worker_actor>))
  CAF_ADD_ATOM(minivllm_remote, minivllm, hello_atom, "mv_hello")
  CAF_ADD_ATOM(minivllm_remote, minivllm, lost_atom, "mv_lost")
  CAF_ADD_ATOM(minivllm_remote, minivllm, restore_atom, "mv_restore")
  CAF_ADD_ATOM(minivllm_remote, minivllm, wait_atom, "mv_wait")
  CAF_ADD_ATOM(minivllm_remote, minivllm, timeout_atom, "mv_timeout")
CAF_END_TYPE_ID_BLOCK(minivllm_remote)

namespace minivllm {

// Whether the message `self` handles now comes from an actor of its own process: the messages
// only the engine's own actors may send (membership, restore) are dropped otherwise.
inline bool from_this_node(caf::scheduled_actor* self) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  return sender != nullptr && sender->node() == self->node();
}

// The CPU backend's collectives of one replica whose ranks are not all threads of this process
// (actors/collective_hub.hpp).
using collective_hub_actor = caf::typed_actor<
    caf::replies_to<CollectiveCall>::with<std::vector<float>>,
    caf::reacts_to<abort_atom, std::string>,  // a rank's step failed: this step's calls fail
    caf::reacts_to<lost_atom, std::string>,   // a rank is gone: every call fails until restored
    caf::reacts_to<restore_atom>>;

// A worker group with members in other processes (actors/worker_group.hpp): the worker's
// protocol, plus the membership the join door reports (this process only).
using worker_group_actor = worker_actor::extend<
    caf::reacts_to<lost_atom, std::int32_t, std::string>,  // rank, why
    caf::reacts_to<GroupMember>,                           // joined in a lost rank's place
    caf::replies_to<restore_atom>::with<bool>>;            // answered once whole again

// The listener the workers connect to (actors/join_door.hpp).
using join_door_actor = caf::typed_actor<
    caf::replies_to<hello_atom>::with<std::string>,  // a nonce
    caf::replies_to<JoinProof>::with<JoinGrant>,
    caf::replies_to<JoinedWorker>::with<bool>,
    // This process only: the remote ranks once all joined, then the replicas' groups (for the
    // ranks that join in a lost one's place later) and the engine (told of each loss).
    caf::replies_to<wait_atom>::with<GroupMembers>,
    caf::reacts_to<std::vector<worker_actor>, caf::actor>,
    caf::reacts_to<std::string>,  // the address it listens on, once published
    caf::reacts_to<timeout_atom>>;

}  // namespace minivllm
