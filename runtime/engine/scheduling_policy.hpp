#pragma once
// The scheduler's policy: the order of the waiting queue and which running sequence gives way
// when the KV cache runs out. FCFS now; a priority policy is another implementation.
#include <cstddef>
#include <memory>
#include <span>

#include "engine/sequence.hpp"

namespace minivllm {

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;

  virtual void enqueue(Sequence* seq) = 0;  // a new arrival
  virtual void requeue(Sequence* seq) = 0;  // a preempted sequence, to be recomputed
  virtual Sequence* next_waiting() const = 0;  // the one to admit next; nullptr when none
  virtual void pop_waiting() = 0;              // removes next_waiting()
  virtual bool remove_waiting(const Sequence* seq) = 0;  // false if not waiting
  virtual std::size_t num_waiting() const = 0;

  // Index into `candidates` (running sequences not yet scheduled this step, in admission order,
  // never empty) of the one to preempt.
  virtual std::size_t pick_victim(std::span<Sequence* const> candidates) const = 0;
};

std::unique_ptr<SchedulingPolicy> make_fcfs_policy();

}  // namespace minivllm
