#pragma once
// The engine tests' fake model behind the queued-step interface the CUDA runner has
// (ModelRunner::queue_step): a queued step runs when it is collected, its fed token ids taken
// from the tokens of the step collected just before it. A queued step's rows are copied as they
// are when it is queued, as a device sampler reads them then: a row that read the tokens sampled
// so far (penalties, min_tokens) and was fed would see one token too few and sample otherwise.
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/model_runner.hpp"
#include "runtime/engine/fake_model_runner.hpp"

namespace minivllm::testing {

class QueueingFakeRunner final : public ModelRunner {
 public:
  // fed_steps counts the steps queued fed by the one ahead of them.
  QueueingFakeRunner(int vocab, int num_blocks, int block_size,
                     std::shared_ptr<std::atomic<int>> fed_steps)
      : model_(vocab, num_blocks, block_size), fed_steps_(std::move(fed_steps)) {}

  int vocab_size() const override { return model_.vocab_size(); }
  std::span<const float> execute(const Batch& batch) override {
    if (!queued_.empty()) throw std::logic_error("fake runner: a step ran past queued ones");
    return model_.execute(batch);
  }

  bool can_queue(std::size_t) const override { return true; }

  void queue_step(const Batch& batch, std::span<const SamplerRow> rows, bool fed) override {
    if (queued_.size() == 2) throw std::logic_error("fake runner: a third step queued");
    if (fed && queued_.empty()) throw std::logic_error("fake runner: fed by no queued step");
    Queued& q = queued_.emplace_back();
    q.batch = batch;
    q.fed = fed;
    for (const SamplerRow& row : rows) {
      q.prompts.emplace_back(row.prompt_ids.begin(), row.prompt_ids.end());
      q.outputs.emplace_back(row.output_ids.begin(), row.output_ids.end());
      q.rows.push_back(row);
    }
    for (std::size_t r = 0; r < q.rows.size(); ++r) {
      q.rows[r].prompt_ids = q.prompts[r];
      q.rows[r].output_ids = q.outputs[r];
    }
    if (fed) ++*fed_steps_;
  }

  // Not ready at every other ask: the worker must poll and also take steps that wait.
  bool step_ready() override {
    if (queued_.empty()) throw std::logic_error("fake runner: nothing queued");
    return (++asks_ % 2) == 0;
  }

  std::vector<SampledToken> collect_step() override {
    if (queued_.empty()) throw std::logic_error("fake runner: nothing queued");
    Queued q = std::move(queued_.front());
    queued_.pop_front();
    for (std::int32_t& id : q.batch.token_ids) {
      if (id >= 0) continue;
      if (!q.fed) throw std::logic_error("fake runner: a fed token id in a step not fed");
      id = last_tokens_.at(static_cast<std::size_t>(-1 - id));
    }
    std::vector<SampledToken> sampled = model_.execute_and_sample(q.batch, q.rows);
    last_tokens_.clear();
    for (const SampledToken& t : sampled) last_tokens_.push_back(t.token);
    return sampled;
  }

 private:
  struct Queued {
    Batch batch;
    std::vector<SamplerRow> rows;
    std::deque<std::vector<std::int32_t>> prompts, outputs;  // the rows' copies (stable)
    bool fed = false;
  };

  FakeModelRunner model_;
  std::shared_ptr<std::atomic<int>> fed_steps_;
  std::deque<Queued> queued_;
  std::vector<std::int32_t> last_tokens_;  // of the step collected last
  int asks_ = 0;
};

}  // namespace minivllm::testing
