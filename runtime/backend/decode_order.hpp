#pragma once
// The order in which the decode attention kernel takes a batch's sequences: longest context
// first. The kernel's blocks start in grid order, so in a batch of mixed lengths that spans
// several waves, starting the longest ones first leaves no multiprocessor streaming one long
// context alone at the end (the H200, 128 sequences of 100-2,048 tokens: 77 -> 96 % of the copy
// bandwidth; kernels/cuda/decode_attention.md).
#include <cstdint>
#include <span>
#include <vector>

namespace minivllm::cuda {

class DecodeOrder {
 public:
  // Writes the indices 0..n-1 of context_lens (n of them) to `order`, longest first. Lengths
  // within one 64-token bucket count as equal (a bucket streams in about a microsecond) and keep
  // their batch order: a counting sort, O(n + longest / 64), no allocation once warm. Returns
  // the lengths' sum (the batch's total context), taken in the same first pass over them.
  std::int64_t longest_first(std::span<const std::int32_t> context_lens, std::int32_t* order);

 private:
  std::vector<std::int32_t> bucket_starts_;
};

}  // namespace minivllm::cuda
