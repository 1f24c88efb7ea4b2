#pragma once
// Token embedding gather on the GPU.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// out[t] = table[ids[t] - first_id] for t < num_tokens; table [rows, dim] holds ids [first_id,
// first_id + rows) of a vocabulary of `vocab` (a vocab-parallel shard; the whole table:
// first_id 0, rows vocab), and out [num_tokens, dim]; both hold `dtype` (bf16 or f32), ids are
// int32, all on the device. With `fed` (may be null), an id -1 - r < 0 stands for fed[r]: a
// token a previous kernel sampled into device memory, which the host has not seen (the caller
// checks r on the host). Another id of the vocabulary gives a row of zeros; one outside [0,
// vocab) a row of NaN instead of a read past the table (the caller checks ids on the host).
// Gathers the rows of any [rows, dim] matrix as well (first_id 0, vocab = rows).
cudaError_t launch_embedding(DType dtype, const void* table, std::int64_t first_id,
                             std::int64_t rows, std::int64_t vocab, std::int64_t dim,
                             const std::int32_t* ids, const std::int32_t* fed,
                             std::int64_t num_tokens, void* out, cudaStream_t stream);

}  // namespace minivllm::cuda
