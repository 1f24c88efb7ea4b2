#include "actors/worker_group.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

#include "actors/runtime_error.hpp"

namespace minivllm {
namespace {

struct GroupState {
  std::vector<worker_actor> workers;
  std::vector<int> devices;

  std::string who(std::size_t i) const {
    return "worker " + std::to_string(i) + " (device " + std::to_string(devices[i]) + ")";
  }
};

using pointer = worker_actor::stateful_pointer<GroupState>;

// One fanned-out request: each worker's answer or error, then the promise once all are in.
template <class Answer>
struct Gather {
  std::vector<std::optional<Answer>> answers;
  std::string error;  // the first worker's that failed
  std::size_t pending = 0;
  caf::typed_response_promise<Answer> promise;
};

// Sends `message` to every worker; calls done(answers) once all answered, or fails the promise
// with the first error.
template <class Answer, class Message, class Done>
caf::typed_response_promise<Answer> fan_out(pointer self, const Message& message, Done done) {
  auto& st = self->state;
  auto gather = std::make_shared<Gather<Answer>>();
  gather->answers.resize(st.workers.size());
  gather->pending = st.workers.size();
  gather->promise = self->make_response_promise<Answer>();
  auto finish_one = [self, gather, done] {
    if (--gather->pending > 0) return;
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
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    self->request(st.workers[i], caf::infinite, message)
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

}  // namespace

worker_actor spawn_worker_group(caf::actor_system& sys, std::vector<worker_actor> workers,
                                std::vector<int> devices) {
  if (workers.size() == 1) return workers.front();
  return sys.spawn(
      [](pointer self, std::vector<worker_actor> workers,
         std::vector<int> devices) -> worker_actor::behavior_type {
        for (const worker_actor& w : workers) self->link_to(w);
        self->state.workers = std::move(workers);
        self->state.devices = std::move(devices);
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
                return group;
              });
            },
            [self](StepWork& work) {
              return fan_out<StepResult>(self, work, [self](std::vector<StepResult>& all) {
                for (std::size_t i = 1; i < all.size(); ++i)
                  if (all[i].tokens != all.front().tokens)
                    throw Error("step " + std::to_string(all.front().step) + ": " +
                                self->state.who(i) + " sampled other tokens than " +
                                self->state.who(0));
                return std::move(all.front());
              });
            },
        };
      },
      std::move(workers), std::move(devices));
}

}  // namespace minivllm
