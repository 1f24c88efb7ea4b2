#pragma once
// Token embedding lookup.
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// out[t] = table[ids[t] - first_id] as f32; table [rows, dim] holds ids [first_id, first_id +
// rows) of a vocabulary of `vocab` (a vocab-parallel shard; the whole table: first_id 0, rows
// vocab). Another id of the vocabulary gives a row of zeros; one outside [0, vocab) throws
// std::out_of_range.
void embedding(const void* table, DType table_dtype, std::int64_t first_id, std::int64_t rows,
               std::int64_t vocab, std::int64_t dim, const std::int32_t* ids,
               std::int64_t num_tokens, float* out);

}  // namespace minivllm::cpu
