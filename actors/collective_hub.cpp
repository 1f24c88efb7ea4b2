#include "actors/collective_hub.hpp"

#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

#include "actors/runtime_error.hpp"

namespace minivllm {
namespace {

using promise = caf::typed_response_promise<std::vector<float>>;

struct Arrival {
  CollectiveCall call;
  promise answer;
};

struct HubState {
  int ranks = 1;
  std::vector<Arrival> meeting;  // the current all_reduce / all_gather, in arrival order
  std::vector<promise> starting;  // at the current step boundary
  std::string broken;  // not empty: this step's collectives fail (a rank's step failed)
  std::string down;    // not empty: a rank is gone; everything fails until restored

  void fail_meeting(const std::string& why) {
    for (Arrival& a : meeting) a.answer.deliver(runtime_error(why));
    meeting.clear();
  }
};

using pointer = collective_hub_actor::stateful_pointer<HubState>;

// Every rank's part is in: each gets the sum (or the gathered columns), computed once.
void finish_meeting(HubState& st) {
  std::vector<const CollectiveCall*> by_rank(static_cast<std::size_t>(st.ranks), nullptr);
  for (const Arrival& a : st.meeting) by_rank[static_cast<std::size_t>(a.call.rank)] = &a.call;
  const CollectiveCall& first = *by_rank[0];
  for (const CollectiveCall* c : by_rank)
    if (c->kind != first.kind || c->data.size() != first.data.size() || c->rows != first.rows ||
        c->cols != first.cols) {
      st.fail_meeting("tensor-parallel ranks disagree on a collective: rank " +
                      std::to_string(c->rank) + " called another than rank 0");
      return;
    }
  std::vector<float> out;
  if (first.kind == static_cast<std::uint8_t>(CollectiveKind::all_reduce)) {
    out = first.data;
    for (int r = 1; r < st.ranks; ++r) {
      const std::vector<float>& in = by_rank[static_cast<std::size_t>(r)]->data;
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += in[i];
    }
  } else {
    const std::int64_t rows = first.rows, cols = first.cols, width = cols * st.ranks;
    out.resize(static_cast<std::size_t>(rows * width));
    for (int r = 0; r < st.ranks; ++r)
      for (std::int64_t i = 0; i < rows; ++i)
        std::copy_n(by_rank[static_cast<std::size_t>(r)]->data.begin() + i * cols, cols,
                    out.begin() + i * width + r * cols);
  }
  for (Arrival& a : st.meeting) a.answer.deliver(out);
  st.meeting.clear();
}

caf::result<std::vector<float>> on_call(pointer self, CollectiveCall& call) {
  auto& st = self->state;
  if (!st.down.empty()) return runtime_error(st.down);
  if (call.rank < 0 || call.rank >= st.ranks)
    return runtime_error("collective from rank " + std::to_string(call.rank) +
                         ", outside a group of " + std::to_string(st.ranks));
  if (call.kind == static_cast<std::uint8_t>(CollectiveKind::begin_step)) {
    st.starting.push_back(self->make_response_promise<std::vector<float>>());
    promise mine = st.starting.back();
    if (st.starting.size() == static_cast<std::size_t>(st.ranks)) {
      // Every rank is here, so none is inside a collective: the group starts the step whole.
      st.broken.clear();
      st.fail_meeting("a collective of the last step was left behind");
      for (promise& p : st.starting) p.deliver(std::vector<float>{});
      st.starting.clear();
    }
    return mine;
  }
  if (!st.broken.empty()) return runtime_error(st.broken);
  if (call.kind > static_cast<std::uint8_t>(CollectiveKind::all_gather) ||
      (call.kind == static_cast<std::uint8_t>(CollectiveKind::all_gather) &&
       static_cast<std::int64_t>(call.data.size()) != call.rows * call.cols))
    return runtime_error("a malformed collective from rank " + std::to_string(call.rank));
  for (const Arrival& a : st.meeting)
    if (a.call.rank == call.rank)
      return runtime_error("rank " + std::to_string(call.rank) + " is in this collective already");
  st.meeting.push_back({std::move(call), self->make_response_promise<std::vector<float>>()});
  promise mine = st.meeting.back().answer;
  if (st.meeting.size() == static_cast<std::size_t>(st.ranks)) finish_meeting(st);
  return mine;
}

class HubCollectives final : public HostCollectives {
 public:
  HubCollectives(caf::actor_system& sys, collective_hub_actor hub, int ranks,
                 std::chrono::milliseconds timeout)
      : sys_(sys), hub_(std::move(hub)), ranks_(ranks), timeout_(timeout) {}

  int ranks() const override { return ranks_; }

  void all_reduce(int rank, float* x, std::size_t n) override {
    const std::vector<float> sum =
        call({static_cast<std::uint8_t>(CollectiveKind::all_reduce), rank, {x, x + n}, 0, 0});
    if (sum.size() != n) throw Error("tensor-parallel all-reduce: the hub answered a wrong size");
    std::copy(sum.begin(), sum.end(), x);
  }

  void all_gather(int rank, const float* x, std::int64_t rows, std::int64_t cols,
                  float* out) override {
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    const std::vector<float> all = call(
        {static_cast<std::uint8_t>(CollectiveKind::all_gather), rank, {x, x + n}, rows, cols});
    if (all.size() != n * static_cast<std::size_t>(ranks_))
      throw Error("tensor-parallel all-gather: the hub answered a wrong size");
    std::copy(all.begin(), all.end(), out);
  }

  void begin_step() override {
    call({static_cast<std::uint8_t>(CollectiveKind::begin_step), 0, {}, 0, 0});
  }
  void abort(const std::string& why) override { caf::anon_send(hub_, abort_atom_v, why); }
  void close(const std::string& why) override { caf::anon_send(hub_, lost_atom_v, why); }

 private:
  // An asynchronous send and a receive that also watches the hub: a hub that stops, or whose
  // process drops the connection, ends the wait at once (a request's receive would sit out the
  // whole timeout). The hub's answer to an asynchronous message comes back as one.
  std::vector<float> call(CollectiveCall c) {
    caf::scoped_actor self{sys_};
    self->monitor(hub_);
    self->send(hub_, std::move(c));
    std::vector<float> out;
    std::string error;
    self->receive([&](std::vector<float>& result) { out = std::move(result); },
                  [&](caf::error& err) { error = error_text(sys_, err); },
                  [&](caf::down_msg& down) {
                    error = "the collectives hub is gone (" + sys_.render(down.reason) + ")";
                  },
                  caf::after(timeout_) >> [&] {
                    error = "no answer within " + std::to_string(timeout_.count()) +
                            " ms (runtime.step_timeout_s)";
                  });
    if (!error.empty()) throw Error("tensor-parallel collective: " + error);
    return out;
  }

  caf::actor_system& sys_;
  collective_hub_actor hub_;
  int ranks_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

collective_hub_actor spawn_collective_hub(caf::actor_system& sys, int ranks) {
  return sys.spawn(
      [](pointer self, int ranks) -> collective_hub_actor::behavior_type {
        self->state.ranks = ranks;
        // Stopping (the engine stops): no rank is left waiting for an answer.
        self->set_exit_handler([self](caf::exit_msg& msg) {
          auto& st = self->state;
          const std::string why = "the engine stopped";
          st.fail_meeting(why);
          for (promise& p : st.starting) p.deliver(runtime_error(why));
          st.starting.clear();
          self->quit(msg.reason);
        });
        return {
            [self](CollectiveCall& call) { return on_call(self, call); },
            [self](abort_atom, const std::string& why) {
              auto& st = self->state;
              if (st.broken.empty()) st.broken = why;
              st.fail_meeting(st.broken);
            },
            [self](lost_atom, const std::string& why) {
              auto& st = self->state;
              if (st.down.empty()) st.down = why;
              st.fail_meeting(st.down);
              for (promise& p : st.starting) p.deliver(runtime_error(st.down));
              st.starting.clear();
            },
            [self](restore_atom) {
              if (!from_this_node(self)) return;  // only the group's own process restores it
              self->state.down.clear();
              self->state.broken.clear();
            },
        };
      },
      ranks);
}

std::shared_ptr<HostCollectives> hub_collectives(caf::actor_system& sys, collective_hub_actor hub,
                                                 int ranks, std::chrono::milliseconds timeout) {
  return std::make_shared<HubCollectives>(sys, std::move(hub), ranks, timeout);
}

}  // namespace minivllm
