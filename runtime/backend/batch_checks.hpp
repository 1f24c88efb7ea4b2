#pragma once
// Host-side checks of a step's batch against one layer's KV cache, shared by every backend: the
// GPU kernels only write NaN for bad input, so each backend checks before it launches. Errors are
// minivllm::Error "<backend>::<op>: what", e.g. "CudaOps::write_kv: KV slot 9 past ...".
#include <cstdint>
#include <string>

#include <minivllm/batch.hpp>
#include <minivllm/tensor.hpp>

namespace minivllm {

// k, v [num_tokens, kv_heads * head_dim] against the caches [num_blocks, block_size, kv_heads,
// head_dim] and batch.slot_mapping (negative slots are padding). Returns the cache's slot count.
std::int64_t check_write_kv(const std::string& backend, const Tensor& k, const Tensor& v,
                            const Tensor& key_cache, const Tensor& value_cache,
                            const Batch& batch);

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
