#pragma once
// Host-side checks of a step's batch against one layer's KV cache, shared by every backend: the
// GPU kernels only write NaN for bad input, so each backend checks before it launches. Errors are
// minivllm::Error "<backend>::<op>: what", e.g. "CudaOps::attention_inputs: KV slot 9 past ...".
#include <cstdint>
#include <string>

#include <minivllm/batch.hpp>
#include <minivllm/tensor.hpp>

namespace minivllm {

// batch.slot_mapping for num_tokens new tokens against the caches [num_blocks, block_size,
// kv_heads, head_dim] (negative slots are padding). Returns the cache's slot count.
std::int64_t check_kv_slots(const std::string& backend, std::int64_t num_tokens,
                            const Tensor& key_cache, const Tensor& value_cache,
                            const Batch& batch);

// Ops::embedding's table of `rows` rows holding ids [first_id, first_id + rows): inside a
// vocabulary of `vocab` ids.
void check_vocab_run(const std::string& backend, std::int64_t first_id, std::int64_t rows,
                     std::int64_t vocab);

struct AttentionInputsShape {
  std::int64_t num_heads = 0;  // query heads
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t num_slots = 0;
};

// Ops::attention_inputs' arguments: qkv [num_tokens, (heads + 2 * kv_heads) * head_dim] against
// the caches, the norms (undefined or [head_dim]), inv_freq [head_dim / 2], batch.positions and
// the slots (check_kv_slots).
AttentionInputsShape check_attention_inputs(const std::string& backend, const Tensor& qkv,
                                            const Tensor& q_norm, const Tensor& k_norm,
                                            const Tensor& inv_freq, const Tensor& key_cache,
                                            const Tensor& value_cache, const Batch& batch);

struct AttentionShape {
  std::int64_t num_heads = 0;
  std::int64_t max_query_len = 0;  // most new tokens of any sequence
};

// q [num_tokens, heads * head_dim] against the caches and the batch's ranges and block tables
// (every block a sequence's context uses lies in the cache).
AttentionShape check_paged_attention(const std::string& backend, const Tensor& q,
                                     const Tensor& key_cache, const Tensor& value_cache,
                                     const Batch& batch);

}  // namespace minivllm
