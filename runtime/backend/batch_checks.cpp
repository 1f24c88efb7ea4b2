#include "backend/batch_checks.hpp"

#include <algorithm>

#include <minivllm/error.hpp>

#include "backend/require.hpp"

namespace minivllm {
#define REQUIRE(ok, backend, op, what) MV_REQUIRE(ok, (backend) + "::" + (op), what)

void check_vocab_run(const std::string& backend, std::int64_t first_id, std::int64_t rows,
                     std::int64_t vocab) {
  REQUIRE(first_id >= 0 && first_id + rows <= vocab, backend, "embedding",
          "a table of " + std::to_string(rows) + " rows from id " + std::to_string(first_id) +
              " is not in a vocabulary of " + std::to_string(vocab));
}

std::int64_t check_kv_slots(const std::string& backend, std::int64_t num_tokens,
                            const Tensor& key_cache, const Tensor& value_cache,
                            const Batch& batch) {
  REQUIRE(value_cache.shape() == key_cache.shape(), backend, "attention_inputs",
          "key cache " + shape_string(key_cache.shape()) + " and value cache " +
              shape_string(value_cache.shape()) + " differ");
  REQUIRE(static_cast<std::int64_t>(batch.slot_mapping.size()) == num_tokens, backend,
          "attention_inputs",
          "slot_mapping has " + std::to_string(batch.slot_mapping.size()) + " entries for " +
              std::to_string(num_tokens) + " tokens");
  const std::int64_t num_slots = key_cache.dim(0) * key_cache.dim(1);
  for (const std::int64_t slot : batch.slot_mapping)
    REQUIRE(slot < num_slots, backend, "attention_inputs",
            "KV slot " + std::to_string(slot) + " past the cache's " + std::to_string(num_slots));
  return num_slots;
}

AttentionInputsShape check_attention_inputs(const std::string& backend, const Tensor& qkv,
                                            const Tensor& q_norm, const Tensor& k_norm,
                                            const Tensor& inv_freq, const Tensor& key_cache,
                                            const Tensor& value_cache, const Batch& batch) {
  AttentionInputsShape shape;
  shape.num_kv_heads = key_cache.dim(2);
  shape.head_dim = key_cache.dim(3);
  const bool heads_fit = shape.head_dim > 0 && shape.num_kv_heads > 0 &&
                         qkv.rank() == 2 && qkv.dim(1) % shape.head_dim == 0;
  if (heads_fit) shape.num_heads = qkv.dim(1) / shape.head_dim - 2 * shape.num_kv_heads;
  REQUIRE(heads_fit && shape.num_heads > 0 && shape.num_heads % shape.num_kv_heads == 0,
          backend, "attention_inputs",
          "qkv " + shape_string(qkv.shape()) + " does not fit cache " +
              shape_string(key_cache.shape()));
  for (const Tensor* norm : {&q_norm, &k_norm})
    REQUIRE(!norm->defined() || (norm->rank() == 1 && norm->dim(0) == shape.head_dim), backend,
            "attention_inputs",
            "norm weight " + shape_string(norm->shape()) + " is not [head_dim " +
                std::to_string(shape.head_dim) + "]");
  REQUIRE(inv_freq.rank() == 1 && 2 * inv_freq.dim(0) == shape.head_dim, backend,
          "attention_inputs",
          "inv_freq " + shape_string(inv_freq.shape()) + " is not [head_dim / 2]");
  REQUIRE(static_cast<std::int64_t>(batch.positions.size()) == qkv.dim(0), backend,
          "attention_inputs",
          "positions has " + std::to_string(batch.positions.size()) + " entries for " +
              std::to_string(qkv.dim(0)) + " tokens");
  shape.num_slots = check_kv_slots(backend, qkv.dim(0), key_cache, value_cache, batch);
  return shape;
}

AttentionShape check_paged_attention(const std::string& backend, const Tensor& q,
                                     const Tensor& key_cache, const Tensor& value_cache,
                                     const Batch& batch) {
  const std::int64_t num_blocks = key_cache.dim(0), block_size = key_cache.dim(1);
  const std::int64_t num_kv_heads = key_cache.dim(2), head_dim = key_cache.dim(3);
  AttentionShape shape;
  shape.num_heads = q.dim(1) / head_dim;
  REQUIRE(value_cache.shape() == key_cache.shape() && q.dim(1) % head_dim == 0 &&
              shape.num_heads % num_kv_heads == 0,
          backend, "paged_attention",
          "q " + shape_string(q.shape()) + " does not fit cache " + shape_string(key_cache.shape()));
  const auto num_seqs = batch.num_seqs();
  REQUIRE(q.dim(0) == batch.num_tokens() && num_seqs > 0 && batch.query_start.front() == 0 &&
              batch.query_start.back() == batch.num_tokens() &&
              static_cast<std::int32_t>(batch.context_lens.size()) == num_seqs &&
              batch.block_tables.size() ==
                  static_cast<std::size_t>(num_seqs) * batch.max_blocks_per_seq,
          backend, "paged_attention", "batch arrays disagree on token or sequence counts");
  for (std::int32_t s = 0; s < num_seqs; ++s) {
    const std::int64_t query_len = batch.query_start[s + 1] - batch.query_start[s];
    const std::int64_t context_len = batch.context_lens[s];
    REQUIRE(query_len >= 0 && context_len >= query_len &&
                context_len <= batch.max_blocks_per_seq * block_size,
            backend, "paged_attention",
            "sequence " + std::to_string(s) + " has query_len " + std::to_string(query_len) +
                " and context_len " + std::to_string(context_len));
    shape.max_query_len = std::max(shape.max_query_len, query_len);
    const std::int64_t used_blocks = (context_len + block_size - 1) / block_size;
    for (std::int64_t j = 0; j < used_blocks; ++j) {
      const std::int32_t block = batch.block_tables[s * batch.max_blocks_per_seq + j];
      REQUIRE(block >= 0 && block < num_blocks, backend, "paged_attention",
              "sequence " + std::to_string(s) + " position " + std::to_string(j * block_size) +
                  " maps to block " + std::to_string(block) + " outside the cache's " +
                  std::to_string(num_blocks));
    }
  }
  return shape;
}

}  // namespace minivllm
