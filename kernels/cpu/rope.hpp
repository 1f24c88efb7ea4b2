#pragma once
// Rotary position embedding, "neox" / rotate_half style as Hugging Face Llama and Qwen3 apply it:
// dimension i of a head pairs with i + head_dim/2, rotated by angle position * inv_freq[i].
#include <cstdint>

namespace minivllm::cpu {

// In place on x [num_tokens, num_heads, head_dim]; inv_freq [head_dim / 2].
void rotary_embedding(float* x, const std::int32_t* positions, const float* inv_freq,
                      std::int64_t num_tokens, std::int64_t num_heads, std::int64_t head_dim);

}  // namespace minivllm::cpu
