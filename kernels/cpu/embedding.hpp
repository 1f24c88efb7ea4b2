#pragma once
// Token embedding lookup.
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// out[t] = table[ids[t]] as f32; table [vocab, dim]. Throws std::out_of_range for an id
// outside [0, vocab).
void embedding(const void* table, DType table_dtype, std::int64_t vocab, std::int64_t dim,
               const std::int32_t* ids, std::int64_t num_tokens, float* out);

}  // namespace minivllm::cpu
