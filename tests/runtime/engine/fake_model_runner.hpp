#pragma once
// A stand-in model for engine tests: its "KV cache" stores each token id (and its position) in the
// slot the batch names, and the logits at a position are a pseudo-random function of the whole
// context read back through the block table. A wrong slot, block table or position changes (or
// aborts) the output, so greedy outputs equal reference_greedy() only if the engine's paging is
// right under batching, prefix caching, chunking and preemption.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/model_runner.hpp"

namespace minivllm::testing {

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Logits after `context`, as the fake model computes them.
inline void fake_logits(std::span<const std::int32_t> context, std::span<float> out) {
  std::uint64_t h = 0;
  for (std::int32_t t : context) h = mix(h ^ static_cast<std::uint64_t>(t));
  for (std::size_t v = 0; v < out.size(); ++v)
    out[v] = static_cast<float>(mix(h + v) >> 40) / static_cast<float>(1 << 24) * 8.0f - 4.0f;
}

// The greedy continuation the engine must reproduce.
inline std::vector<std::int32_t> reference_greedy(std::vector<std::int32_t> context, int vocab,
                                                  int num_new) {
  std::vector<float> logits(vocab);
  std::vector<std::int32_t> out;
  for (int i = 0; i < num_new; ++i) {
    fake_logits(context, logits);
    std::int32_t best = 0;
    for (int v = 1; v < vocab; ++v)
      if (logits[v] > logits[best]) best = v;
    out.push_back(best);
    context.push_back(best);
  }
  return out;
}

class FakeModelRunner final : public ModelRunner {
 public:
  FakeModelRunner(int vocab, int num_blocks, int block_size)
      : vocab_(vocab), block_size_(block_size),
        slots_(static_cast<std::size_t>(num_blocks) * block_size, Slot{-1, -1}) {}

  int vocab_size() const override { return vocab_; }
  std::int64_t tokens_computed() const { return tokens_computed_; }  // over all steps

  std::span<const float> execute(const Batch& b) override {
    for (std::int32_t t = 0; t < b.num_tokens(); ++t)
      slots_.at(b.slot_mapping[t]) = Slot{b.token_ids[t], b.positions[t]};
    tokens_computed_ += b.num_tokens();
    logits_.assign(b.logits_rows.size() * vocab_, 0.0f);
    std::vector<std::int32_t> context;
    for (std::size_t r = 0; r < b.logits_rows.size(); ++r) {
      const std::int32_t row = b.logits_rows[r];
      std::int32_t seq = 0;
      while (b.query_start[seq + 1] <= row) ++seq;
      const std::int32_t pos = b.positions[row];
      context.clear();
      for (std::int32_t q = 0; q <= pos; ++q) {
        const std::int32_t block = b.block_tables.at(seq * b.max_blocks_per_seq + q / block_size_);
        const Slot& s = slots_.at(static_cast<std::size_t>(block) * block_size_ + q % block_size_);
        if (s.position != q) throw std::logic_error("fake model: KV slot holds the wrong position");
        context.push_back(s.token);
      }
      fake_logits(context, std::span<float>(logits_).subspan(r * vocab_, vocab_));
    }
    return logits_;
  }

 private:
  struct Slot {
    std::int32_t token;
    std::int32_t position;
  };
  int vocab_;
  int block_size_;
  std::vector<Slot> slots_;
  std::vector<float> logits_;
  std::int64_t tokens_computed_ = 0;
};

}  // namespace minivllm::testing
