#pragma once
// The gated MLP's activation.
#include <cstdint>

namespace minivllm::cpu {

// out[r, i] = silu(gate_up[r, i]) * gate_up[r, width + i], silu(x) = x / (1 + exp(-x)): each row
// of gate_up [rows, 2 * width] holds gate then up, as the fused gate/up projection writes them;
// out [rows, width].
void silu_and_mul(const float* gate_up, float* out, std::int64_t rows, std::int64_t width);

}  // namespace minivllm::cpu
