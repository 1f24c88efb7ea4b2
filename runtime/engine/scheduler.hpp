#pragma once
// Continuous batching: each step takes the running sequences' decodes, then continues chunked
// prefills, then admits waiting sequences, within max_num_seqs and max_num_batched_tokens.
// When the KV cache runs out it preempts (policy's choice, FCFS: the newest) by freeing the
// victim's blocks; the victim keeps its tokens and is recomputed later.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/block_manager.hpp"
#include "engine/scheduling_policy.hpp"
#include "engine/sequence.hpp"
#include "engine/step_plan.hpp"

namespace minivllm {

struct SchedulerConfig {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 8192;
  int max_model_len = 4096;
  bool enable_chunked_prefill = false;
  // Throws minivllm::Error naming the field and its allowed range.
  void validate() const;
};

struct CacheConfig {
  int block_size = 16;
  int num_blocks = 0;
  bool enable_prefix_caching = true;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, const CacheConfig& cache,
            std::unique_ptr<SchedulingPolicy> policy = make_fcfs_policy());

  // Queues `seq` (not owned). Throws minivllm::Error when it could never run: a prompt longer
  // than max_model_len, or more KV blocks than the whole cache at its longest.
  void add(Sequence* seq);

  // Picks this step's batch; advances each scheduled sequence's num_computed_tokens.
  StepPlan schedule();
  // The same into `plan`, whose vectors keep their capacity (no allocation per step).
  void schedule(StepPlan& plan);
  // After the step's KV is written: offers newly full blocks to the prefix cache.
  void finish_step(const StepPlan& plan);
  // finish_step for one of the plan's sequences.
  void finish_step(Sequence& seq) {
    if (seq.status == SequenceStatus::running) blocks_.register_full_blocks(seq);
  }
  // Stops a sequence (finished or aborted) wherever it is, freeing its blocks.
  void finish(Sequence* seq, FinishReason reason);

  bool has_unfinished() const { return !running_.empty() || policy_->num_waiting() > 0; }
  std::size_t num_running() const { return running_.size(); }
  std::size_t num_waiting() const { return policy_->num_waiting(); }
  const std::vector<Sequence*>& running() const { return running_; }
  const SchedulerConfig& config() const { return config_; }
  std::uint64_t num_preemptions() const { return num_preemptions_; }  // since construction
  const BlockManager& block_manager() const { return blocks_; }
  // The KV of the free blocks is gone (BlockManager::forget_cached_blocks).
  void forget_cached_prefixes() { blocks_.forget_cached_blocks(); }

  // "" when the block pool agrees with the running sequences (BlockManager::check_invariants).
  std::string check_invariants() const;
  // Tokens of seq at its longest: its prompt and max_tokens outputs, within max_model_len.
  int longest_of(const Sequence& seq) const;

 private:
  // Decodes first, in admission order; the running prefills are left in prefills_. Returns the
  // budget left (a local, not a reference: the loop's stores into sequences cannot alias it).
  int schedule_decodes(StepPlan& plan, int budget);
  void schedule_prefills(StepPlan& plan, int& budget);
  // Gets blocks for seq's next num_new tokens, preempting others (or seq itself) as needed.
  bool allocate_running(Sequence* seq, int num_new, StepPlan& plan) {
    return blocks_.allocate(*seq, num_new) || preempt_for(seq, num_new, plan);
  }
  // allocate_running when the pool is short.
  bool preempt_for(Sequence* seq, int num_new, StepPlan& plan);
  void preempt(Sequence* victim, StepPlan& plan);
  void admit_waiting(StepPlan& plan, int& budget);
  // Appends seq's next num_new tokens to the plan (plan.num_batched_tokens is set at the end).
  void add_to_plan(Sequence* seq, int num_new, StepPlan& plan, int& budget);
  // Room for seq at its longest (when admitted: waiting sequences hold no more than their
  // prompt), so that its decodes never reallocate.
  void reserve_longest(Sequence& seq) const;

  SchedulerConfig config_;
  BlockManager blocks_;
  std::unique_ptr<SchedulingPolicy> policy_;
  std::vector<Sequence*> running_;  // in admission order
  std::vector<Sequence*> snapshot_;  // running_ at the start of schedule(), reused
  std::vector<Sequence*> prefills_;  // running sequences not decoding this step, reused
  std::uint64_t step_ = 0;
  std::uint64_t num_preemptions_ = 0;
};

}  // namespace minivllm
