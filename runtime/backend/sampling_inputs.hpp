#pragma once
// What the GPU sampler's kernel needs of a batch of SamplerRows, built on the host: one
// cuda::SamplingRow per row and the sparse list of logit adjustments that stand for the CPU
// sampler's min_tokens masking and penalties (engine/cpu_sampler.cpp), one entry per changed
// (row, token). Plain host code: tested without a GPU.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/cpu_sampler.hpp"
#include "kernels/cuda/sampling.cuh"

namespace minivllm {

class SamplingInputs {
 public:
  // Rebuilds the inputs for `rows` (storage is reused from call to call). Draws one number from
  // the rng of each random (non-greedy) row: its seed, as the CPU sampler draws one per row.
  void build(std::span<const SamplerRow> rows, int vocab);

  const std::vector<cuda::SamplingRow>& rows() const { return rows_; }
  const std::vector<cuda::LogitAdjustment>& adjustments() const { return adjustments_; }
  // Rows wanting top logprobs (> 0): their SamplingRow::top_slot counts them, in row order.
  int num_top() const { return num_top_; }

 private:
  // The current row's entry for `token`, created on first use.
  cuda::LogitAdjustment& entry(std::int32_t token);
  void add_adjustments(const SamplerRow& row, int vocab);

  std::vector<cuda::SamplingRow> rows_;
  std::vector<cuda::LogitAdjustment> adjustments_;
  int num_top_ = 0;
  std::unordered_map<std::int32_t, std::size_t> entry_of_;  // token -> index, current row
  std::unordered_map<std::int32_t, int> output_counts_;     // current row
};

}  // namespace minivllm
