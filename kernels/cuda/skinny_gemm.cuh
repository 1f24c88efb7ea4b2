#pragma once
// y = x @ W^T for a few rows of x (decode), reading W once: at m = 1 it beats cuBLAS on every
// Qwen3-0.6B projection (H200, first version: 2.3-4.7 us against 4.4-12.6 us,
// benchmarks/results/history/skinny_gemm.md; today's figures in skinny_gemm.md).
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

#include "kernels/cuda/l2_prefetch.cuh"

namespace minivllm::cuda {

// Whether launch_skinny_gemm takes these operands: in_features a multiple of 8 and x, w 16-byte
// aligned (the kernel reads both in 16-byte vectors). Callers route anything else to cuBLAS.
bool skinny_gemm_supports(std::int64_t in_features, const void* x, const void* w);

// y [m, out] = x [m, in] @ w [out, in]^T: x and w bf16 on the device, y `out_dtype` (bf16 or f32),
// fp32 accumulation. Any m >= 0, but its time grows about linearly with m past m = 2 (fp32 FMA
// issue-bound; m > 16 runs in slices of 16 rows, each reading W again): callers use it for the
// smallest m only. No allocation and no sync: safe inside a CUDA graph capture. `next`: bytes
// (the next projection's weights) the blocks ask the L2 to fetch while they run.
cudaError_t launch_skinny_gemm(const void* x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream, L2Prefetch next = {});

// A pre-norm block's input, normalized as the GEMM reads it (rms_norm fused into the projection
// that follows it): row i is h_i * weight / sqrt(mean(h_i^2) + eps), h = x + residual rounded to
// bf16 as launch_add_rms_norm stores the residual stream (x null: h = residual, as
// launch_rms_norm), all bf16 [m, in] (weight [in]). With x, h goes to residual_out [m, in], which
// may alias neither x nor residual (the GEMM's blocks all read them). The normalized rows are not
// rounded to bf16 before the products as the two kernels' are: the same within bf16 rounding.
struct RmsNormedRows {
  const void* x = nullptr;
  const void* residual = nullptr;
  const void* weight = nullptr;
  float eps = 0.0f;
  void* residual_out = nullptr;
};

// launch_skinny_gemm on normed rows: the norm costs no kernel of its own. Operands 16-byte aligned.
cudaError_t launch_skinny_gemm(const RmsNormedRows& x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream, L2Prefetch next = {});

// The gated MLP's activation fused into the GEMM's epilogue: out [m, width] = silu(x @ W_gate^T) *
// (x @ W_up^T), gate_up_w [2 * width, in] holding the gate rows then the up rows (the fused
// gate/up projection), x and gate_up_w bf16, out bf16. Bit for bit launch_skinny_gemm to bf16 y
// followed by launch_silu_and_mul (activation.cuh), in one kernel; the same operand conditions
// (skinny_gemm_supports), cost and graph safety as launch_skinny_gemm.
cudaError_t launch_skinny_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                            std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream,
                                            L2Prefetch next = {});
// The same on normed rows (RmsNormedRows).
cudaError_t launch_skinny_gemm_silu_and_mul(const RmsNormedRows& x, const void* gate_up_w,
                                            void* out, std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream,
                                            L2Prefetch next = {});

}  // namespace minivllm::cuda
