#pragma once
// y = x @ W^T for a few rows of x (decode), reading W once: at m = 1 it beats cuBLAS on every
// Qwen3-0.6B projection (H200, first version: 2.3-4.7 us against 4.4-12.6 us,
// benchmarks/results/history/skinny_gemm.md; today's figures in skinny_gemm.md).
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// Whether launch_skinny_gemm takes these operands: in_features a multiple of 8 and x, w 16-byte
// aligned (the kernel reads both in 16-byte vectors). Callers route anything else to cuBLAS.
bool skinny_gemm_supports(std::int64_t in_features, const void* x, const void* w);

// y [m, out] = x [m, in] @ w [out, in]^T: x and w bf16 on the device, y `out_dtype` (bf16 or f32),
// fp32 accumulation. Any m >= 0, but its time grows about linearly with m past m = 2 (fp32 FMA
// issue-bound; m > 16 runs in slices of 16 rows, each reading W again): callers use it for the
// smallest m only. No allocation and no sync: safe inside a CUDA graph capture.
cudaError_t launch_skinny_gemm(const void* x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream);

// The gated MLP's activation fused into the GEMM's epilogue: out [m, width] = silu(x @ W_gate^T) *
// (x @ W_up^T), gate_up_w [2 * width, in] holding the gate rows then the up rows (the fused
// gate/up projection), x and gate_up_w bf16, out bf16. Bit for bit launch_skinny_gemm to bf16 y
// followed by launch_silu_and_mul (activation.cuh), in one kernel; the same operand conditions
// (skinny_gemm_supports), cost and graph safety as launch_skinny_gemm.
cudaError_t launch_skinny_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                            std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream);

}  // namespace minivllm::cuda
