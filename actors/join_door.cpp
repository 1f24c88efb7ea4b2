#include "actors/join_door.hpp"

#include <algorithm>
#include <deque>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>

#include "actors/join_token.hpp"
#include "actors/runtime_error.hpp"
#include "log/log.hpp"

namespace minivllm {
namespace {

// Nonces handed out and not yet proven: a bound, so that a peer asking again and again holds
// no more than this.
constexpr std::size_t kMaxOpenNonces = 64;

struct Slot {
  enum class State { open, granted, joined } state = State::open;
  int replica = 0;
  int rank = 0;
  std::string ticket;
  std::string name;       // "pid 123 on host-a"
  caf::actor_addr joiner;  // the worker process's session
  worker_actor worker;
};

struct DoorState {
  JoinDoorSpec spec;
  std::vector<Slot> slots;
  std::deque<std::string> nonces;
  std::vector<worker_actor> groups;  // set once the runtime started: later joins go there
  caf::actor engine;                 // set with the groups: told of each loss
  std::optional<caf::typed_response_promise<GroupMembers>> waiting;

  int replicas() const { return spec.total / spec.ranks; }
  std::string slot_name(const Slot& s) const {
    return rank_name(s.replica, s.rank, replicas()) + " (remote: " + s.name + ")";
  }
  bool all_joined() const {
    return std::all_of(slots.begin(), slots.end(),
                       [](const Slot& s) { return s.state == Slot::State::joined; });
  }
  GroupMembers members() const {
    GroupMembers out;
    for (const Slot& s : slots) out.members.push_back({s.rank, s.worker, slot_name(s)});
    return out;
  }
};

using pointer = join_door_actor::stateful_pointer<DoorState>;

caf::result<JoinGrant> on_proof(pointer self, JoinProof& proof) {
  auto& st = self->state;
  const auto nonce = std::find(st.nonces.begin(), st.nonces.end(), proof.nonce);
  if (nonce == st.nonces.end() || !proofs_match(proof.proof, join_proof(st.spec.token, proof.nonce))) {
    if (nonce != st.nonces.end()) st.nonces.erase(nonce);
    log_line(LogLevel::warn, "refused a worker (" + proof.name +
                                 "): its join token does not match parallel.join_token_file");
    return request_refused("refused: the join token does not match the engine's "
                           "(parallel.join_token_file)");
  }
  st.nonces.erase(nonce);
  const auto slot = std::find_if(st.slots.begin(), st.slots.end(),
                                 [](const Slot& s) { return s.state == Slot::State::open; });
  if (slot == st.slots.end())
    return request_refused("refused: every remote rank of the engine is taken (parallel.remote_workers = " +
                           std::to_string(st.slots.size()) + ")");
  if (!st.groups.empty() && !st.spec.nccl_ids[static_cast<std::size_t>(slot->replica)].empty())
    return request_refused(
        "refused: " + rank_name(slot->replica, slot->rank, st.replicas()) +
        " was lost, and on the cuda backend a worker cannot take its place (the other ranks' "
        "NCCL communicator would have to be rebuilt): restart the engine");
  slot->state = Slot::State::granted;
  slot->ticket = make_nonce();
  slot->name = proof.name;
  slot->joiner = proof.joiner.address();
  if (proof.joiner) self->monitor(proof.joiner);
  log_line(LogLevel::info, st.slot_name(*slot) + " joins; loading");
  JoinGrant grant;
  grant.ticket = slot->ticket;
  grant.config_toml = st.spec.config_toml;
  grant.replica = slot->replica;
  grant.rank = slot->rank;
  grant.ranks = st.spec.ranks;
  grant.eos_token_ids = st.spec.eos_token_ids;
  grant.nccl_id = st.spec.nccl_ids[static_cast<std::size_t>(slot->replica)];
  grant.hub = st.spec.hubs[static_cast<std::size_t>(slot->replica)];
  return grant;
}

caf::result<bool> on_joined(pointer self, JoinedWorker& joined) {
  auto& st = self->state;
  const auto slot = std::find_if(st.slots.begin(), st.slots.end(), [&](const Slot& s) {
    return s.state == Slot::State::granted && s.ticket == joined.ticket;
  });
  if (slot == st.slots.end() || !joined.worker)
    return request_refused("refused: no rank was granted to this ticket");
  slot->state = Slot::State::joined;
  slot->worker = std::move(joined.worker);
  self->monitor(slot->worker);
  log_line(LogLevel::info, st.slot_name(*slot) + " joined");
  if (!st.groups.empty()) {
    self->send(caf::actor_cast<worker_group_actor>(st.groups[static_cast<std::size_t>(slot->replica)]),
               GroupMember{slot->rank, slot->worker, st.slot_name(*slot)});
  } else if (st.waiting && st.all_joined()) {
    st.waiting->deliver(st.members());
    st.waiting.reset();
  }
  return true;
}

// A granted or joined worker's process is gone: its rank opens again.
void on_down(pointer self, const caf::down_msg& down) {
  auto& st = self->state;
  for (Slot& s : st.slots) {
    if (s.state == Slot::State::open ||
        (down.source != s.joiner && down.source != s.worker.address()))
      continue;
    const std::string why = st.slot_name(s) + " was lost (" + self->system().render(down.reason) + ")";
    if (s.state == Slot::State::joined && !st.groups.empty()) {
      // The group first: the scheduler's restore request, which the engine's message leads to,
      // must find the group already short of this rank.
      self->send(caf::actor_cast<worker_group_actor>(st.groups[static_cast<std::size_t>(s.replica)]),
                 lost_atom_v, static_cast<std::int32_t>(s.rank), why);
      // The engine's handle is dynamically typed (the door is spawned before it).
      caf::send_as(caf::actor_cast<caf::actor>(self), st.engine, lost_atom_v,
                   static_cast<std::int32_t>(s.replica), why);
    }
    // After the messages: a request sent once this line is seen finds the engine told.
    log_line(LogLevel::warn, why + "; waiting for a worker to join in its place (minivllm worker --connect " +
                                 st.spec.address + ")");
    s = Slot{Slot::State::open, s.replica, s.rank, {}, {}, {}, {}};
  }
}

}  // namespace

std::string rank_name(int replica, int rank, int replicas) {
  return "worker rank " + std::to_string(rank) +
         (replicas > 1 ? " of replica " + std::to_string(replica) : std::string());
}

join_door_actor spawn_join_door(caf::actor_system& sys, JoinDoorSpec spec) {
  return sys.spawn(
      [](pointer self, JoinDoorSpec spec) -> join_door_actor::behavior_type {
        auto& st = self->state;
        for (int g = spec.first_remote; g < spec.total; ++g) {
          Slot s;
          s.replica = g / spec.ranks;
          s.rank = g % spec.ranks;
          st.slots.push_back(s);
        }
        st.spec = std::move(spec);
        self->set_down_handler([self](caf::down_msg& down) { on_down(self, down); });
        return {
            [self](hello_atom) {
              auto& st = self->state;
              st.nonces.push_back(make_nonce());
              if (st.nonces.size() > kMaxOpenNonces) st.nonces.pop_front();
              return st.nonces.back();
            },
            [self](JoinProof& proof) { return on_proof(self, proof); },
            [self](JoinedWorker& joined) { return on_joined(self, joined); },
            [self](wait_atom) -> caf::result<GroupMembers> {
              auto& st = self->state;
              if (!from_this_node(self)) return request_refused("refused");
              if (st.all_joined()) return st.members();
              st.waiting = self->make_response_promise<GroupMembers>();
              self->delayed_send(self, st.spec.join_timeout, timeout_atom_v);
              return *st.waiting;
            },
            [self](std::vector<worker_actor>& groups, caf::actor& engine) {
              if (!from_this_node(self)) return;
              self->state.groups = std::move(groups);
              self->state.engine = std::move(engine);
            },
            [self](std::string& address) {
              if (from_this_node(self)) self->state.spec.address = std::move(address);
            },
            [self](timeout_atom) {
              auto& st = self->state;
              if (!from_this_node(self) || !st.waiting) return;
              std::string missing;
              std::size_t joined = 0;
              for (const Slot& s : st.slots) {
                if (s.state == Slot::State::joined) {
                  ++joined;
                  continue;
                }
                missing += (missing.empty() ? "" : ", ") + rank_name(s.replica, s.rank, st.replicas());
              }
              st.waiting->deliver(runtime_error(
                  "parallel.join_timeout_s (" + std::to_string(st.spec.join_timeout.count()) +
                  " s) passed with " + std::to_string(joined) + " of " +
                  std::to_string(st.slots.size()) + " remote workers joined; missing: " + missing +
                  " (start each with: minivllm worker --connect " + st.spec.address +
                  " --token-file FILE)"));
              st.waiting.reset();
            },
        };
      },
      std::move(spec));
}

}  // namespace minivllm
