#pragma once
// y = x @ W^T on the tensor cores for decode-sized batches (m of tens to hundreds of rows), where
// cuBLAS sits at a ~5-7 us floor per GEMM on Qwen3-0.6B's projections (H200) while the weights
// take 1-3 us to read. Blocks of 128 threads each own a tile of rows of x by rows of W and stream
// in_features through shared memory 64 at a time (cp.async, 8, 6 or 4 stages by tile size,
// mma.m16n8k16 bf16 with fp32 accumulation); the first stages' weights are loaded before the
// wait on the previous kernel (programmatic dependent launch). Figures in tile_gemm.md.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

// Rows of x by rows of W per block. `automatic` picks by the number of blocks a shape gives on
// the current device; the others are for benchmarks and tests.
enum class TileGemmShape { automatic, m64n64, m32n64, m32n32 };

// How a launch divides its work. With splits > 1, in_features is cut into that many ranges, each
// summed by its own block, and the last block of a tile to finish adds their sums in a fixed
// order (so results are deterministic, but differ in rounding from an unsplit launch).
struct TileGemmPlan {
  TileGemmShape shape = TileGemmShape::automatic;
  int splits = 0;  // 0: enough to give every SM a block, where the workspace has room
};

// Device memory for split launches: `bytes` at `data` (16-byte aligned), zeroed before its first
// use; the kernels leave it zeroed. Launches on one stream may share it. Without one (bytes 0),
// automatic plans do not split.
struct TileGemmWorkspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};
inline constexpr std::size_t kTileGemmWorkspaceBytes = std::size_t{4} << 20;  // decode's needs

// Whether the tile GEMM takes these operands: in_features a positive multiple of 64 and x, w
// 16-byte aligned. Callers route anything else elsewhere.
bool tile_gemm_supports(std::int64_t in_features, const void* x, const void* w);

// y [m, out] = x [m, in] @ w [out, in]^T: x and w bf16 on the device, y `out_dtype` (bf16 or f32),
// fp32 accumulation; any m >= 0 and out >= 0. Unsplit, a row's result depends neither on m nor
// on the tile shape (each output sums in_features in the same order). No allocation and no sync:
// safe inside a CUDA graph capture. cudaErrorInvalidValue for an explicit plan the workspace
// cannot hold.
cudaError_t launch_tile_gemm(const void* x, const void* w, DType out_dtype, void* y,
                             std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                             const TileGemmWorkspace& workspace, cudaStream_t stream,
                             TileGemmPlan plan = {});

// The gated MLP's activation in the epilogue: out [m, width] = silu(x @ W_gate^T) * (x @ W_up^T),
// gate_up_w [2 * width, in] holding the gate rows then the up rows, all bf16. Bit for bit
// launch_tile_gemm to bf16 with the same plan, followed by launch_silu_and_mul (activation.cuh),
// in one kernel.
cudaError_t launch_tile_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                          std::int64_t m, std::int64_t width,
                                          std::int64_t in_features,
                                          const TileGemmWorkspace& workspace, cudaStream_t stream,
                                          TileGemmPlan plan = {});

}  // namespace minivllm::cuda
