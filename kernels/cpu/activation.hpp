#pragma once
// The gated MLP's activation.
#include <cstdint>

namespace minivllm::cpu {

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)); out may alias gate or up.
void silu_and_mul(const float* gate, const float* up, float* out, std::int64_t n);

}  // namespace minivllm::cpu
