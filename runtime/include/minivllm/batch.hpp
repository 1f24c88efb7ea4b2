#pragma once
// What one forward step computes: the new tokens of several sequences, flattened, with where each
// sequence's tokens sit in the paged KV cache. Host-side arrays; a backend copies what it needs to
// its device. The engine fills it (runtime/model/batch_builder.hpp helps).
//
// A sequence's new tokens are the last `query_len` tokens of its first `context_len` tokens: the
// ones before them (a prefix-cache hit, earlier prefill chunks, earlier decode steps) are already
// in the cache. New token i of a sequence attends to every cached or new token at a position <= its
// own (causal). A decode step is a sequence with query_len 1.
#include <cstdint>
#include <vector>

namespace minivllm {

struct Batch {
  // Per token, sequences back to back: [num_tokens].
  std::vector<std::int32_t> token_ids;
  std::vector<std::int32_t> positions;     // position in its sequence (0-based), for RoPE
  std::vector<std::int64_t> slot_mapping;  // cache slot to write its K/V: block * block_size + offset

  // Per sequence: [num_seqs + 1] offsets of its tokens in the arrays above (query ranges).
  std::vector<std::int32_t> query_start;
  std::vector<std::int32_t> context_lens;  // [num_seqs]: tokens in the cache after this step

  // [num_seqs, max_blocks_per_seq] row-major: the physical blocks holding each sequence's tokens
  // in order (block j holds positions [j * block_size, (j+1) * block_size)); unused entries -1.
  std::vector<std::int32_t> block_tables;
  std::int32_t max_blocks_per_seq = 0;

  // Token rows whose logits forward() returns, in this order: usually the last token of each
  // sequence; every prompt position when prompt logprobs are asked for.
  std::vector<std::int32_t> logits_rows;

  std::int32_t num_tokens() const { return static_cast<std::int32_t>(token_ids.size()); }
  std::int32_t num_seqs() const {
    return query_start.empty() ? 0 : static_cast<std::int32_t>(query_start.size()) - 1;
  }
};

}  // namespace minivllm
