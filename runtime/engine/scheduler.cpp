#include "engine/scheduler.hpp"

#include <algorithm>

#include <minivllm/error.hpp>

namespace minivllm {

void SchedulerConfig::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error("scheduler config: " + what);
  };
  require(max_num_seqs >= 1,
          "max_num_seqs must be at least 1, got " + std::to_string(max_num_seqs));
  require(max_model_len >= 1,
          "max_model_len must be at least 1, got " + std::to_string(max_model_len));
  require(max_num_batched_tokens >= 1 && max_num_batched_tokens <= kMaxStepTokens,
          "max_num_batched_tokens must be in [1, " + std::to_string(kMaxStepTokens) + "], got " +
              std::to_string(max_num_batched_tokens));
  // Without chunking a whole prompt (or a preempted sequence's recompute) is one step's batch.
  require(enable_chunked_prefill || max_num_batched_tokens >= max_model_len,
          "max_num_batched_tokens (" + std::to_string(max_num_batched_tokens) +
              ") must be >= max_model_len (" + std::to_string(max_model_len) +
              ") unless enable_chunked_prefill");
}

Scheduler::Scheduler(const SchedulerConfig& config, const CacheConfig& cache,
                     std::unique_ptr<SchedulingPolicy> policy)
    : config_(config),
      blocks_(cache.num_blocks, cache.block_size, cache.enable_prefix_caching),
      policy_(std::move(policy)) {
  config_.validate();
  running_.reserve(config_.max_num_seqs);
}

void Scheduler::add(Sequence* seq) {
  const std::string who = "request " + seq->request_id() + ": ";
  const int prompt = seq->num_prompt_tokens();
  if (prompt == 0) throw Error(who + "the prompt is empty");
  if (prompt > config_.max_model_len)
    throw Error(who + "the prompt has " + std::to_string(prompt) +
                " tokens, longer than max_model_len=" + std::to_string(config_.max_model_len));
  // At its longest the sequence holds KV for every token but the last one it samples.
  const int kv_tokens = std::max(prompt, longest_of(*seq) - 1);
  const int need = BlockManager::blocks_for(kv_tokens, blocks_.block_size());
  if (need > blocks_.num_blocks())
    throw Error(who + "needs up to " + std::to_string(need) + " KV cache blocks (" +
                std::to_string(kv_tokens) + " tokens) but the cache has only " +
                std::to_string(blocks_.num_blocks()) + "; lower max_tokens or grow the cache");
  seq->status = SequenceStatus::waiting;
  policy_->enqueue(seq);
}

void Scheduler::add_to_plan(Sequence* seq, int num_new, StepPlan& plan, int& budget) {
  ScheduledSequence& s = plan.seqs.emplace_back();
  s.seq = seq;
  s.start = seq->num_computed_tokens;
  s.num_new_tokens = num_new;
  seq->num_computed_tokens += num_new;
  s.sample = seq->num_computed_tokens == seq->num_tokens();
  s.prompt_logits = seq->wants_prompt_logprobs() &&
                    static_cast<int>(seq->prompt_logprobs.size()) < seq->num_prompt_tokens();
  budget -= num_new;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  schedule(plan);
  return plan;
}

void Scheduler::schedule(StepPlan& plan) {
  plan.step = ++step_;
  plan.seqs.clear();
  plan.seqs.reserve(running_.size() + 1);
  plan.preempted.clear();
  int budget = config_.max_num_batched_tokens;
  budget = schedule_decodes(plan, budget);
  schedule_prefills(plan, budget);
  if (plan.preempted.empty()) admit_waiting(plan, budget);
  plan.num_batched_tokens = config_.max_num_batched_tokens - budget;
}

int Scheduler::schedule_decodes(StepPlan& plan, int budget) {
  snapshot_.assign(running_.begin(), running_.end());  // preemption edits running_
  prefills_.clear();
  for (Sequence* seq : snapshot_) {
    if (budget == 0) break;  // nothing is left for the prefills either
    if (seq->status != SequenceStatus::running) continue;  // preempted by an earlier decode
    if (seq->num_tokens() - seq->num_computed_tokens != 1) {
      prefills_.push_back(seq);
      continue;
    }
    if (allocate_running(seq, 1, plan)) add_to_plan(seq, 1, plan, budget);
  }
  return budget;
}

void Scheduler::schedule_prefills(StepPlan& plan, int& budget) {
  for (Sequence* seq : prefills_) {
    if (budget == 0) break;
    if (seq->status != SequenceStatus::running) continue;  // preempted this step
    const int remaining = seq->num_tokens() - seq->num_computed_tokens;
    if (remaining > budget && !config_.enable_chunked_prefill) continue;
    const int num_new = std::min(remaining, budget);
    if (allocate_running(seq, num_new, plan)) add_to_plan(seq, num_new, plan, budget);
  }
}

bool Scheduler::preempt_for(Sequence* seq, int num_new, StepPlan& plan) {
  do {
    // The candidates: running sequences not in this step's plan yet (seq itself included).
    std::vector<const Sequence*> planned;
    for (const ScheduledSequence& s : plan.seqs) planned.push_back(s.seq);
    std::sort(planned.begin(), planned.end());
    std::vector<Sequence*> candidates;
    for (Sequence* s : running_)
      if (!std::binary_search(planned.begin(), planned.end(), s)) candidates.push_back(s);
    Sequence* victim = candidates[policy_->pick_victim(candidates)];
    preempt(victim, plan);
    if (victim == seq) return false;
  } while (!blocks_.allocate(*seq, num_new));
  return true;
}

void Scheduler::preempt(Sequence* victim, StepPlan& plan) {
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  blocks_.free(*victim);
  victim->num_computed_tokens = 0;
  victim->num_cached_tokens = 0;
  victim->status = SequenceStatus::waiting;
  ++victim->num_preemptions;
  ++num_preemptions_;
  policy_->requeue(victim);
  plan.preempted.push_back(victim);
}

void Scheduler::admit_waiting(StepPlan& plan, int& budget) {
  while (budget > 0 && static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = policy_->next_waiting();
    if (seq == nullptr) break;
    // prompt_logprobs need logits at every prompt position: no cache hits until they are in.
    const bool needs_prompt_logits =
        seq->wants_prompt_logprobs() &&
        static_cast<int>(seq->prompt_logprobs.size()) < seq->num_prompt_tokens();
    const std::vector<std::int32_t> cached =
        needs_prompt_logits ? std::vector<std::int32_t>{} : blocks_.match_prefix(*seq);
    const int num_cached = static_cast<int>(cached.size()) * blocks_.block_size();
    const int remaining = seq->num_tokens() - num_cached;
    if (remaining > budget && !config_.enable_chunked_prefill) break;
    const int num_new = std::min(remaining, budget);
    seq->num_computed_tokens = num_cached;
    if (!blocks_.allocate(*seq, num_new, cached)) {
      seq->num_computed_tokens = 0;
      break;
    }
    policy_->pop_waiting();
    reserve_longest(*seq);
    seq->status = SequenceStatus::running;
    seq->num_cached_tokens = num_cached;
    running_.push_back(seq);
    add_to_plan(seq, num_new, plan, budget);
  }
}

int Scheduler::longest_of(const Sequence& seq) const {
  return std::min(seq.num_prompt_tokens() + seq.params().max_tokens, config_.max_model_len);
}

void Scheduler::reserve_longest(Sequence& seq) const {
  const int longest = longest_of(seq);
  // A look-ahead step may compute KV for the last sampled token too: blocks for all its tokens.
  seq.reserve(longest, BlockManager::blocks_for(longest, blocks_.block_size()));
}

void Scheduler::finish_step(const StepPlan& plan) {
  for (const ScheduledSequence& s : plan.seqs) finish_step(*s.seq);
}

void Scheduler::finish(Sequence* seq, FinishReason reason) {
  if (seq->status == SequenceStatus::running) {
    running_.erase(std::find(running_.begin(), running_.end(), seq));
    blocks_.free(*seq);
  } else if (seq->status == SequenceStatus::waiting) {
    policy_->remove_waiting(seq);
  }
  seq->status = SequenceStatus::finished;
  seq->finish_reason = reason;
}

std::string Scheduler::check_invariants() const {
  return blocks_.check_invariants(running_);
}

}  // namespace minivllm
