#pragma once
// Causal self-attention over a paged KV cache, for prefill (a sequence's new tokens attend to its
// cached prefix and to themselves, so prefix-cache hits and chunked prefill work) and decode (one
// new token) alike. The new tokens' keys and values must already be in the cache (write_kv).
// Grouped-query attention: query head h reads KV head h / (num_heads / num_kv_heads).
#include <cstdint>

namespace minivllm::cpu {

struct PagedAttentionArgs {
  const float* q = nullptr;            // [num_tokens, num_heads, head_dim]
  // [num_blocks, block_size, num_kv_heads, head_dim]: f32 values, or e4m3 codes when the
  // scales (e8m0 [num_blocks, num_kv_heads, block_size]: kernels/fp8_scales.hpp) are given.
  const void* key_cache = nullptr;
  const void* value_cache = nullptr;  // same layout
  const std::uint8_t* key_scales = nullptr;
  const std::uint8_t* value_scales = nullptr;
  const std::int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  const std::int32_t* query_start = nullptr;   // [num_seqs + 1]: the sequences' token ranges
  const std::int32_t* context_lens = nullptr;  // [num_seqs]: cached tokens incl. the new ones
  std::int64_t num_seqs = 0;
  std::int64_t max_blocks_per_seq = 0;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
  float* out = nullptr;  // [num_tokens, num_heads, head_dim]
};

// The new token i (0-based) of a sequence with query_len new tokens sits at position
// context_len - query_len + i and attends to positions 0..that position. Throws
// std::invalid_argument for a block table entry outside the cache or a bad range.
void paged_attention(const PagedAttentionArgs& args);

}  // namespace minivllm::cpu
