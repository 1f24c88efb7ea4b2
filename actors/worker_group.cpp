#include "actors/worker_group.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

#include "actors/runtime_error.hpp"
#include "log/log.hpp"

namespace minivllm {
namespace {

struct GroupState {
  std::vector<GroupMember> members;
  std::vector<bool> present;  // a lost rank's entry is false until one joins in its place
  std::string lost;           // not empty: why the group runs nothing now
  WorkerReady ready;          // what the first ready found: a rank that joins later must match
  collective_hub_actor hub;
  // The fanned-out requests not yet answered: each fails with the loss of a member.
  std::unordered_map<std::uint64_t, std::function<void(const std::string&)>> pending;
  std::uint64_t next_request = 0;
  std::vector<caf::typed_response_promise<bool>> restore_waiters;

  const std::string& who(std::size_t i) const { return members[i].name; }
};

using pointer = worker_group_actor::stateful_pointer<GroupState>;

// One fanned-out request: each worker's answer or error, then the promise once all are in (or
// at once when a member is lost).
template <class Answer>
struct Gather {
  std::vector<std::optional<Answer>> answers;
  std::string error;  // the first worker's that failed
  std::size_t pending = 0;
  bool done = false;
  caf::typed_response_promise<Answer> promise;
};

// Sends `message` to every worker; calls done(answers) once all answered, or fails the promise
// with the first error.
template <class Answer, class Message, class Done>
caf::typed_response_promise<Answer> fan_out(pointer self, const Message& message, Done done) {
  auto& st = self->state;
  auto gather = std::make_shared<Gather<Answer>>();
  gather->answers.resize(st.members.size());
  gather->pending = st.members.size();
  gather->promise = self->make_response_promise<Answer>();
  const std::uint64_t id = st.next_request++;
  st.pending.emplace(id, [gather](const std::string& why) {
    if (gather->done) return;
    gather->done = true;
    gather->promise.deliver(worker_lost_error(why));
  });
  auto finish_one = [self, gather, done, id] {
    if (--gather->pending > 0 || gather->done) return;
    gather->done = true;
    self->state.pending.erase(id);
    if (!gather->error.empty()) {
      gather->promise.deliver(runtime_error(gather->error));
      return;
    }
    std::vector<Answer> answers;
    for (auto& a : gather->answers) answers.push_back(std::move(*a));
    try {
      gather->promise.deliver(done(answers));
    } catch (const std::exception& e) {
      gather->promise.deliver(runtime_error(e.what()));
    }
  };
  for (std::size_t i = 0; i < st.members.size(); ++i)
    self->request(st.members[i].worker, caf::infinite, message)
        .then(
            [gather, finish_one, i](Answer& answer) {
              gather->answers[i] = std::move(answer);
              finish_one();
            },
            [self, gather, finish_one, i](caf::error& err) {
              if (gather->error.empty())
                gather->error = self->state.who(i) + ": " + error_text(self->system(), err);
              finish_one();
            });
  return gather->promise;
}

// The member that joined in a lost one's place answered ready: the group may be whole again.
void check_joined(pointer self, std::size_t rank, const WorkerReady& ready) {
  auto& st = self->state;
  if (ready.vocab_size != st.ready.vocab_size || ready.num_blocks < st.ready.num_blocks) {
    log_line(LogLevel::error,
             log_format("%s cannot take the lost rank's place: a vocabulary of %d and %lld KV "
                        "blocks, the group needs %d and at least %lld",
                        st.who(rank).c_str(), ready.vocab_size,
                        static_cast<long long>(ready.num_blocks), st.ready.vocab_size,
                        static_cast<long long>(st.ready.num_blocks)));
    return;
  }
  st.present[rank] = true;
  if (std::find(st.present.begin(), st.present.end(), false) != st.present.end()) return;
  log_line(LogLevel::info, "the worker group is whole again (" + st.who(rank) + " joined)");
  st.lost.clear();
  if (st.hub) self->send(st.hub, restore_atom_v);
  for (auto& p : st.restore_waiters) p.deliver(true);
  st.restore_waiters.clear();
}

}  // namespace

worker_actor spawn_worker_group(caf::actor_system& sys, std::vector<GroupMember> members,
                                collective_hub_actor hub) {
  const bool remote = std::any_of(members.begin(), members.end(), [&](const GroupMember& m) {
    return m.worker.node() != sys.node();
  });
  if (members.size() == 1 && !remote) return members.front().worker;
  worker_group_actor group = sys.spawn(
      [](pointer self, std::vector<GroupMember> members,
         collective_hub_actor hub) -> worker_group_actor::behavior_type {
        auto& st = self->state;
        // Linked to every member: the group's end stops them; a remote member's end is the join
        // door's to report (lost_atom), not a reason to stop.
        for (const GroupMember& m : members) self->link_to(m.worker);
        self->set_exit_handler([self](caf::exit_msg& msg) {
          if (msg.source.node() != self->node()) return;
          self->quit(msg.reason);
        });
        st.present.assign(members.size(), true);
        st.members = std::move(members);
        st.hub = std::move(hub);
        return {
            [self](ready_atom) {
              return fan_out<WorkerReady>(self, ready_atom_v, [self](std::vector<WorkerReady>& all) {
                WorkerReady group = all.front();
                for (std::size_t i = 1; i < all.size(); ++i) {
                  if (all[i].vocab_size != group.vocab_size)
                    throw Error(self->state.who(i) + " has a vocabulary of " +
                                std::to_string(all[i].vocab_size) + ", " + self->state.who(0) +
                                " one of " + std::to_string(group.vocab_size));
                  group.num_blocks = std::min(group.num_blocks, all[i].num_blocks);
                }
                self->state.ready = group;
                return group;
              });
            },
            [self](StepWork& work) -> caf::result<StepResult> {
              if (!self->state.lost.empty()) return worker_lost_error(self->state.lost);
              return fan_out<StepResult>(self, work, [self](std::vector<StepResult>& all) {
                for (std::size_t i = 1; i < all.size(); ++i)
                  if (all[i].tokens != all.front().tokens)
                    throw Error("step " + std::to_string(all.front().step) + ": " +
                                self->state.who(i) + " sampled other tokens than " +
                                self->state.who(0));
                return std::move(all.front());
              });
            },
            [self](lost_atom, std::int32_t rank, const std::string& why) {
              auto& st = self->state;
              if (!from_this_node(self) || rank < 0 || rank >= static_cast<std::int32_t>(st.members.size()))
                return;
              st.present[static_cast<std::size_t>(rank)] = false;
              if (st.lost.empty()) st.lost = why;
              if (st.hub) self->send(st.hub, lost_atom_v, why);
              auto pending = std::move(st.pending);
              st.pending.clear();
              for (auto& [id, fail] : pending) fail(why);
            },
            [self](GroupMember& member) {
              auto& st = self->state;
              if (!from_this_node(self) || member.rank < 0 ||
                  member.rank >= static_cast<std::int32_t>(st.members.size()))
                return;
              const std::size_t rank = static_cast<std::size_t>(member.rank);
              self->link_to(member.worker);
              st.members[rank] = std::move(member);
              self->request(st.members[rank].worker, caf::infinite, ready_atom_v)
                  .then([self, rank](WorkerReady& ready) { check_joined(self, rank, ready); },
                        [self, rank](caf::error& err) {
                          log_line(LogLevel::error, self->state.who(rank) + " did not load: " +
                                                        error_text(self->system(), err));
                        });
            },
            [self](restore_atom) -> caf::result<bool> {
              auto& st = self->state;
              if (st.lost.empty()) return true;
              st.restore_waiters.push_back(self->make_response_promise<bool>());
              return st.restore_waiters.back();
            },
        };
      },
      std::move(members), std::move(hub));
  return caf::actor_cast<worker_actor>(group);
}

}  // namespace minivllm
