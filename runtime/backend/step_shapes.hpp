#pragma once
// The shapes of the steps a backend replays from captured graphs (the CUDA backend's
// step_graphs.hpp), and the padding that brings a step to its shape. Plain C++ over Batch, so
// that the CPU tests pin it: a padded step's real rows equal the step's own.
//
// A shape fixes what a captured forward's launches depend on: the sequence and token counts, the
// logits rows, the block tables' width and the longest query the attention launches for. Two
// kinds of step have one:
// - decode: 1-256 sequences of one token each, each a logits row in order, padded to a bucket of
//   sequences (1, 2, 4, 8, then multiples of 8) by one-token pad sequences, each a logits row;
// - prefill: 1-4 sequences whose first has two or more tokens (so the attention runs every one
//   through its prefill kernel), up to `max_prefill_tokens` tokens and no more logits rows than
//   sequences, padded to a bucket of tokens (powers of two from 4 to 64, multiples of 64 to 512,
//   then of 128) by one pad sequence holding the rest, with no tokens when there is none; the
//   bucket's token count stands for the longest query, which it bounds.
// Pad sequences have one token each but the first, which takes whatever else the bucket holds.
// One of m tokens has token id 0 at positions 0..m-1, no KV slot (-1), context m and block 0 in
// every block-table entry: it writes nothing, reads block 0, and its rows are dropped. A padded
// prefill step's pad has no more tokens than the step's longest context, so it fits the width.
// A batch whose arrays disagree on their counts has no shape: it runs eagerly, where the ops'
// checks name what is wrong.
#include <compare>
#include <cstdint>
#include <optional>
#include <vector>

#include <minivllm/batch.hpp>

namespace minivllm {

struct StepShape {
  std::int32_t seqs = 0;
  std::int32_t tokens = 0;
  std::int32_t logits_rows = 0;
  std::int32_t width = 0;          // block-table entries per sequence
  std::int32_t max_query_len = 0;  // 1 for a decode shape; `tokens` for a prefill shape

  auto operator<=>(const StepShape&) const = default;
};

inline constexpr std::int32_t kMaxDecodeGraphSeqs = 256;
inline constexpr std::int32_t kMaxPrefillGraphTokens = 2048;
inline constexpr std::int32_t kMaxPrefillGraphSeqs = 4;

// The decode bucket of `seqs` (1..kMaxDecodeGraphSeqs) sequences, and the prefill bucket of
// `tokens` (2..kMaxPrefillGraphTokens).
std::int32_t decode_bucket(std::int32_t seqs);
std::int32_t prefill_bucket(std::int32_t tokens);
// The prefill buckets that steps of up to `max_tokens` tokens pad to, in order, up to `largest`.
std::vector<std::int32_t> prefill_buckets(std::int64_t max_tokens, std::int64_t largest);

// The shape `batch` is padded to, or none when it is neither kind (max_prefill_tokens, at most
// kMaxPrefillGraphTokens: 0 leaves every prefill step out). A prefill shape's width is at least
// `min_prefill_width` (a power of two), so that one graph serves every prompt up to that width.
std::optional<StepShape> step_shape_of(const Batch& batch, std::int32_t max_prefill_tokens,
                                       std::int32_t min_prefill_width = 1);

// The prefill shape of one sequence filling a bucket of `tokens` at `width`: what a runner
// captures ahead of serving, from an empty batch padded to it (needing `tokens` - 1 <= `width` *
// block_size).
StepShape prefill_shape(std::int32_t tokens, std::int32_t width);
// `batch` (of `shape`, as step_shape_of gives) padded to `shape` into `padded`; `padded`'s
// vectors keep their memory from one call to the next.
void pad_step(const Batch& batch, const StepShape& shape, Batch& padded);

}  // namespace minivllm
