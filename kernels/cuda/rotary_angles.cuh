#pragma once
// RoPE's angles for a step's tokens, once for all of its layers: each layer's attention_inputs
// reads them instead of computing a sincosf per element (28 times a step for Qwen3-0.6B).
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda {

// out [num_tokens, 2 * half] f32: out[t][i] = cos(positions[t] * inv_freq[i]) and out[t][half + i]
// = sin(...) for i < half, by sincosf in fp32. inv_freq [half], computed on the host: 1 /
// theta^(2i / head_dim), with Llama 3's rope scaling already applied where the model has it. All
// pointers on the device.
cudaError_t launch_rotary_angles(const std::int32_t* positions, const float* inv_freq,
                                 std::int64_t num_tokens, std::int64_t half, float* out,
                                 cudaStream_t stream);

}  // namespace minivllm::cuda
