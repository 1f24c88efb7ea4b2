#include "backend/step_shapes.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

namespace {

std::int32_t pow2_at_least(std::int32_t n) {
  return static_cast<std::int32_t>(std::bit_ceil(static_cast<std::uint32_t>(std::max(n, 1))));
}

std::optional<StepShape> decode_shape_of(const Batch& batch) {
  const std::int32_t n = batch.num_seqs();
  if (n > kMaxDecodeGraphSeqs || batch.logits_rows.size() != static_cast<std::size_t>(n))
    return std::nullopt;
  for (std::int32_t s = 0; s < n; ++s)
    if (batch.query_start[s + 1] != s + 1 || batch.logits_rows[s] != s) return std::nullopt;
  const std::int32_t seqs = decode_bucket(n);
  return StepShape{seqs, seqs, seqs, pow2_at_least(batch.max_blocks_per_seq), 1};
}

std::optional<StepShape> prefill_shape_of(const Batch& batch, std::int32_t max_prefill_tokens,
                                          std::int32_t min_width) {
  const std::int32_t n = batch.num_seqs(), tokens = batch.num_tokens();
  if (n > kMaxPrefillGraphSeqs || batch.query_start[1] < 2 ||
      tokens > std::min(max_prefill_tokens, kMaxPrefillGraphTokens) ||
      batch.logits_rows.size() > static_cast<std::size_t>(n))
    return std::nullopt;
  const std::int32_t bucket = prefill_bucket(tokens);
  // The pad's context must fit the width, as the longest real context does.
  if (bucket - tokens > *std::max_element(batch.context_lens.begin(), batch.context_lens.end()))
    return std::nullopt;
  const auto rows = static_cast<std::int32_t>(batch.logits_rows.size());
  return StepShape{n + 1, bucket, rows,
                   std::max(pow2_at_least(batch.max_blocks_per_seq), min_width), bucket};
}

// Arrays that agree on their counts, and logits rows among the tokens: anything else runs eagerly,
// where the ops' checks name what is wrong.
bool well_formed(const Batch& batch) {
  const std::int32_t n = batch.num_seqs(), tokens = batch.num_tokens();
  const auto count = [](std::int64_t c) { return static_cast<std::size_t>(c); };
  if (n < 1 || batch.query_start.front() != 0 || batch.query_start.back() != tokens ||
      batch.positions.size() != count(tokens) || batch.slot_mapping.size() != count(tokens) ||
      batch.context_lens.size() != count(n) || batch.max_blocks_per_seq < 0 ||
      batch.block_tables.size() != count(std::int64_t{n} * batch.max_blocks_per_seq))
    return false;
  return std::all_of(batch.logits_rows.begin(), batch.logits_rows.end(),
                     [&](std::int32_t row) { return row >= 0 && row < tokens; });
}

}  // namespace

std::int32_t decode_bucket(std::int32_t seqs) {
  return seqs <= 8 ? pow2_at_least(seqs) : (seqs + 7) / 8 * 8;
}

std::int32_t prefill_bucket(std::int32_t tokens) {
  if (tokens <= 64) return std::max(pow2_at_least(tokens), 4);
  return tokens <= 512 ? (tokens + 63) / 64 * 64 : (tokens + 127) / 128 * 128;
}

std::vector<std::int32_t> prefill_buckets(std::int64_t max_tokens, std::int64_t largest) {
  std::vector<std::int32_t> buckets;
  const std::int64_t most = std::min<std::int64_t>(max_tokens, kMaxPrefillGraphTokens);
  // Each bucket above the one before holds the steps between them.
  for (std::int32_t below = 1, tokens = prefill_bucket(2); below < most && tokens <= largest;
       below = tokens, tokens = prefill_bucket(tokens + 1))
    buckets.push_back(tokens);
  return buckets;
}

std::optional<StepShape> step_shape_of(const Batch& batch, std::int32_t max_prefill_tokens,
                                       std::int32_t min_prefill_width) {
  if (!well_formed(batch)) return std::nullopt;
  if (batch.num_tokens() == batch.num_seqs()) return decode_shape_of(batch);
  return prefill_shape_of(batch, max_prefill_tokens, min_prefill_width);
}

StepShape prefill_shape(std::int32_t tokens, std::int32_t width) {
  return {2, tokens, 1, width, tokens};
}

void pad_step(const Batch& batch, const StepShape& shape, Batch& padded) {
  const std::int32_t n = batch.num_seqs(), real_tokens = batch.num_tokens();
  const std::int32_t pads = shape.seqs - n;
  const auto seqs = static_cast<std::size_t>(shape.seqs);
  const auto tokens = static_cast<std::size_t>(shape.tokens);
  padded.token_ids.assign(batch.token_ids.begin(), batch.token_ids.end());
  padded.token_ids.resize(tokens, 0);
  padded.positions.assign(batch.positions.begin(), batch.positions.end());
  padded.slot_mapping.assign(batch.slot_mapping.begin(), batch.slot_mapping.end());
  padded.slot_mapping.resize(tokens, -1);
  padded.query_start.assign(batch.query_start.begin(), batch.query_start.end());
  if (padded.query_start.empty()) padded.query_start.push_back(0);
  padded.context_lens.assign(batch.context_lens.begin(), batch.context_lens.end());
  padded.logits_rows.assign(batch.logits_rows.begin(), batch.logits_rows.end());
  // The first pad takes the rest of the bucket's tokens after one for each other pad.
  const std::int32_t first_pad = shape.tokens - real_tokens - (pads - 1);
  if (pads < 0 || (pads == 0 ? first_pad != 1 : first_pad < 0) ||
      batch.max_blocks_per_seq > shape.width)
    throw Error("pad_step: a batch of " + std::to_string(n) + " sequences, " +
                std::to_string(real_tokens) + " tokens and width " +
                std::to_string(batch.max_blocks_per_seq) + " does not pad to " +
                std::to_string(shape.seqs) + " sequences, " + std::to_string(shape.tokens) +
                " tokens and width " + std::to_string(shape.width));
  for (std::int32_t p = 0; p < pads; ++p) {
    const std::int32_t m = p == 0 ? first_pad : 1;
    for (std::int32_t i = 0; i < m; ++i) padded.positions.push_back(i);
    padded.query_start.push_back(padded.query_start.back() + m);
    padded.context_lens.push_back(m);
    if (m > 0 && padded.logits_rows.size() < static_cast<std::size_t>(shape.logits_rows))
      padded.logits_rows.push_back(padded.query_start.back() - 1);
  }
  padded.max_blocks_per_seq = shape.width;
  padded.block_tables.assign(seqs * static_cast<std::size_t>(shape.width), 0);
  for (std::int32_t s = 0; s < n; ++s) {
    const auto from = batch.block_tables.begin() +
                      static_cast<std::ptrdiff_t>(s) * batch.max_blocks_per_seq;
    const auto row = padded.block_tables.begin() + static_cast<std::ptrdiff_t>(s) * shape.width;
    std::copy(from, from + batch.max_blocks_per_seq, row);
    std::fill(row + batch.max_blocks_per_seq, row + shape.width, -1);
  }
}

}  // namespace minivllm
