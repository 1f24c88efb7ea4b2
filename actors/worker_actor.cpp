#include "actors/worker_actor.hpp"

#include <random>
#include <unordered_map>

#include <caf/all.hpp>

#include "actors/runtime_error.hpp"
#include "engine/cpu_sampler.hpp"

namespace minivllm {
namespace {

// What the worker remembers of a sequence to sample it: the worker appends the tokens it
// samples, so only new sequences travel, once.
struct SampledSeq {
  SamplingParams params;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> output;
  std::mt19937_64 rng;
};

struct WorkerState {
  std::unique_ptr<ModelRunner> runner;
  std::string load_error;  // why there is no runner
  std::vector<std::int32_t> eos_ids;
  std::unordered_map<std::uint64_t, SampledSeq> seqs;
};

StepResult run_step(WorkerState& st, StepWork& work) {
  for (std::uint64_t id : work.released_seq_ids) st.seqs.erase(id);
  for (WorkerSeq& s : work.new_seqs)
    st.seqs.insert_or_assign(s.seq_id, SampledSeq{std::move(s.params), std::move(s.prompt), {},
                                                  std::mt19937_64(s.seed)});
  if (work.look_ahead)  // one token per row, row order
    for (std::size_t r = 0; r < work.sample_seq_ids.size(); ++r)
      work.batch.token_ids[r] = st.seqs.at(work.sample_seq_ids[r]).output.back();
  const std::span<const float> logits = st.runner->execute(work.batch);
  const auto vocab = static_cast<std::size_t>(st.runner->vocab_size());
  StepResult result;
  result.step = work.step;
  result.tokens.reserve(work.sample_seq_ids.size());
  // One row per sequence: appending a row's token right away cannot affect another row.
  for (std::size_t r = 0; r < work.sample_seq_ids.size(); ++r) {
    SampledSeq& s = st.seqs.at(work.sample_seq_ids[r]);
    SampledToken t = sample_row(
        {logits.subspan(r * vocab, vocab), &s.params, s.prompt, s.output, st.eos_ids, &s.rng});
    s.output.push_back(t.token);
    result.tokens.push_back(t.token);
    if (t.logprobs) {
      result.logprobs.resize(r);  // the rows before the first asking get empty ones
      result.logprobs.push_back(std::move(*t.logprobs));
    } else if (!result.logprobs.empty()) {
      result.logprobs.emplace_back();
    }
  }
  return result;
}

}  // namespace

worker_actor spawn_worker(caf::actor_system& sys,
                          std::function<std::unique_ptr<ModelRunner>()> make_runner,
                          std::vector<std::int32_t> eos_ids) {
  using pointer = worker_actor::stateful_pointer<WorkerState>;
  // Detached: the runner (a device's context and stream, later its NCCL communicator) is built
  // and used on this actor's own thread only.
  return sys.spawn<caf::detached>(
      [](pointer self, std::function<std::unique_ptr<ModelRunner>()> make,
         std::vector<std::int32_t> eos) -> worker_actor::behavior_type {
        self->state.eos_ids = std::move(eos);
        try {
          self->state.runner = make();
        } catch (const std::exception& e) {
          self->state.load_error = e.what();
        }
        return {
            [self](ready_atom) -> caf::result<std::int32_t> {
              if (!self->state.runner) return runtime_error(self->state.load_error);
              return self->state.runner->vocab_size();
            },
            [self](StepWork& work) -> caf::result<StepResult> {
              if (!self->state.runner) return runtime_error(self->state.load_error);
              try {
                return run_step(self->state, work);
              } catch (const std::exception& e) {
                return runtime_error(std::string("worker: ") + e.what());
              }
            },
        };
      },
      std::move(make_runner), std::move(eos_ids));
}

}  // namespace minivllm
