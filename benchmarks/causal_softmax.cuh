#pragma once
// The softmax step of the naive attention baseline in gpu_prefill_attention_bench: the bench's
// only kernel, kept beside it (kernels/ has no plain softmax op).
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::bench {

// In place on `num_rows` rows of `row_len` bf16 scores (raw q . k), row i being query position
// i % row_len of a prompt: row i becomes softmax(score * scale) over keys 0..(i % row_len), zero
// past them, in fp32 before rounding back to bf16.
cudaError_t launch_causal_softmax(void* scores, std::int64_t num_rows, std::int64_t row_len,
                                  float scale, cudaStream_t stream);

}  // namespace minivllm::bench
