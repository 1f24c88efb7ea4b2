#pragma once
// What the step loop runs a batch on: a model with its KV cache on some backend.
#include <span>
#include <vector>

#include <minivllm/batch.hpp>

#include "backend/cpu_sampler.hpp"

namespace minivllm {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;
  // Runs one step. Returns f32 logits on the host, [batch.logits_rows.size(), vocab_size()]
  // row-major, valid until the next call.
  virtual std::span<const float> execute(const Batch& batch) = 0;
  // Runs one step and samples each logits row: rows[i] is logits row i (its `logits` span is
  // not read), so rows.size() must equal batch.logits_rows.size() (a step wanting prompt
  // logits calls execute() instead). This default brings the logits to the host (execute) for
  // the CPU sampler; a runner whose logits live on a device may sample them there.
  virtual std::vector<SampledToken> execute_and_sample(const Batch& batch,
                                                       std::span<const SamplerRow> rows);

  // Queued steps, for a runner that samples on its device: queue_step() puts a step on the
  // device and returns, collect_step() brings the oldest queued step's tokens back, so that the
  // next step is queued while the one ahead of it runs. A fed step is queued behind one not
  // collected yet: its token id -1 - r stands for the token that step samples in row r. At most
  // two steps are queued at once. rows as for execute_and_sample; the batch and rows are read
  // before queue_step returns. This default queues nothing: can_queue is false and the others
  // throw.
  virtual bool can_queue(std::size_t /*rows*/) const { return false; }
  virtual void queue_step(const Batch& batch, std::span<const SamplerRow> rows, bool fed);
  // Whether the oldest queued step's tokens are back (collect_step would not wait).
  virtual bool step_ready();
  virtual std::vector<SampledToken> collect_step();
};

}  // namespace minivllm
