// First come, first served: arrivals wait in order, preempted sequences go back to the front,
// and the most recently admitted running sequence is the one preempted.
#include <algorithm>
#include <deque>

#include "engine/scheduling_policy.hpp"

namespace minivllm {

namespace {

class FcfsPolicy final : public SchedulingPolicy {
 public:
  void enqueue(Sequence* seq) override { waiting_.push_back(seq); }
  void requeue(Sequence* seq) override { waiting_.push_front(seq); }
  Sequence* next_waiting() const override { return waiting_.empty() ? nullptr : waiting_.front(); }
  void pop_waiting() override { waiting_.pop_front(); }
  bool remove_waiting(const Sequence* seq) override {
    const auto it = std::find(waiting_.begin(), waiting_.end(), seq);
    if (it == waiting_.end()) return false;
    waiting_.erase(it);
    return true;
  }
  std::size_t num_waiting() const override { return waiting_.size(); }
  std::size_t pick_victim(std::span<Sequence* const> candidates) const override {
    return candidates.size() - 1;
  }

 private:
  std::deque<Sequence*> waiting_;
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_fcfs_policy() { return std::make_unique<FcfsPolicy>(); }

}  // namespace minivllm
