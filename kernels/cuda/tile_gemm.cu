#include "kernels/cuda/tile_gemm.cuh"

#include <algorithm>
#include <cstddef>

#include <cuda_bf16.h>

#include "kernels/cuda/detail/cp_async.cuh"
#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/mma_sync.cuh"
#include "kernels/cuda/detail/silu.cuh"
#include "kernels/cuda/detail/warpgroup_mma.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::ldmatrix_x4;
using detail::mma_m16n8k16;
using detail::swizzled;
using detail::shared_address;

// Four warps: two over the tile's rows of x, two over its rows of W. A warp owns 16 MT rows of x
// by 8 NT rows of W (MT m16 by NT n8 fragments of mma.m16n8k16).
constexpr int kThreads = 128;
constexpr int kStepK = 64;  // in_features per stage: one 128-byte row per operand row
constexpr int kChunksPerRow = kStepK * 2 / 16;  // 16-byte chunks
// Split launches: tiles a workspace counts arrivals for, and the fewest stages per split.
constexpr std::int64_t kMaxCountedTiles = 4096;
constexpr std::size_t kCounterBytes = kMaxCountedTiles * sizeof(int);
constexpr int kMinStepsPerSplit = 4;
constexpr int kMaxSplits = 16;

template <int MT, int NT>
struct Tile {
  static constexpr int kRowsX = 2 * 16 * MT;
  static constexpr int kRowsW = 2 * 8 * NT;
  static constexpr int kStageBytes = (kRowsX + kRowsW) * kStepK * 2;
  // ~64 KB of loads in flight per block: a small tile streams W through a deeper ring.
  static constexpr int kStages = kStageBytes <= 8192 ? 8 : kStageBytes <= 12288 ? 6 : 4;
  static constexpr int kSharedBytes = kStages * kStageBytes;
  static constexpr int kAccumulators = MT * NT * 4;  // per thread
  // 16-byte chunks of a stage each thread copies, per operand.
  static constexpr int kChunksX = kRowsX * kChunksPerRow / kThreads;
  static constexpr int kChunksW = kRowsW * kChunksPerRow / kThreads;
  static_assert(kChunksX >= 1 && kChunksW >= 1 && NT % 2 == 0, "tile too small for the block");
};

// Epilogues: which rows of W a tile reads (its r-th of kRowsW), and what becomes of a warp's
// accumulators. acc[i][j][e]: row 16 i + lane / 4 + 8 (e / 2) of the warp's rows of x, column
// 8 j + 2 (lane % 4) + e % 2 of its rows of W.
//
// Calls f(row, column, i, j, k) for each of a warp's accumulators acc[i][j][k] with j < kColumns
// whose row of x is below m; the warp's rows start at row0, its columns at column0.
template <int MT, int kColumns, class F>
__device__ __forceinline__ void for_each_fragment(std::int64_t m, std::int64_t row0,
                                                  std::int64_t column0, F&& f) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t row = row0 + 16 * i + lane / 4 + 8 * h;
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < kColumns; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) f(row, column0 + 8 * j + 2 * (lane % 4) + e, i, j, 2 * h + e);
    }
}

// The plain GEMM: column c of y is row c of W, rounded to OutT.
template <class OutT>
struct StoreProjection {
  OutT* out;
  std::int64_t columns;

  static constexpr int kWeightRowsPerColumn = 1;

  template <int NT>
  __device__ std::int64_t weight_row(std::int64_t first_column, int r) const {
    return min(first_column + r, columns - 1);  // past the last row: re-read it, store nothing
  }

  // The warp's rows of x start at `row0`, its rows of W at column `column0` of y.
  template <int MT, int NT>
  __device__ void store(const float (&acc)[MT][NT][4], std::int64_t m, std::int64_t row0,
                        std::int64_t column0) const {
    for_each_fragment<MT, NT>(m, row0, column0, [&](std::int64_t row, std::int64_t column, int i,
                                                    int j, int k) {
      if (column < columns) out[row * columns + column] = from_float<OutT>(acc[i][j][k]);
    });
  }
};

// The gated MLP's activation: W [2 * columns, in] holding the gate rows then the up rows. A warp's
// first NT / 2 fragments read gate rows and its last NT / 2 the up rows of the same columns, so a
// thread holds both operands of each of its outputs. gate and up are rounded to bf16 as the plain
// GEMM stores them, then combined as silu_and_mul does: the same bits as the two kernels.
struct StoreSiluAndMul {
  __nv_bfloat16* out;
  std::int64_t columns;

  static constexpr int kWeightRowsPerColumn = 2;

  // Tile rows of W per warp: 8 NT, gate rows first; first_column is the tile's first output.
  template <int NT>
  __device__ std::int64_t weight_row(std::int64_t first_column, int r) const {
    constexpr int kHalf = 4 * NT;
    const int warp_n = r / (2 * kHalf), q = r % (2 * kHalf);
    const std::int64_t column = min(first_column + warp_n * kHalf + q % kHalf, columns - 1);
    return q < kHalf ? column : columns + column;
  }

  template <int MT, int NT>
  __device__ void store(const float (&acc)[MT][NT][4], std::int64_t m, std::int64_t row0,
                        std::int64_t column0) const {
    for_each_fragment<MT, NT / 2>(m, row0, column0, [&](std::int64_t row, std::int64_t column,
                                                        int i, int j, int k) {
      if (column >= columns) return;
      const float gate = __bfloat162float(__float2bfloat16_rn(acc[i][j][k]));
      const float up = __bfloat162float(__float2bfloat16_rn(acc[i][j + NT / 2][k]));
      out[row * columns + column] = __float2bfloat16_rn(detail::silu_times(gate, up));
    });
  }
};

// Grid: x over tiles of rows of x (consecutive blocks share a W tile, read from HBM once), y over
// tiles of W.
// The sums of a split launch: the block of split z of tile t keeps its accumulators at
// partials[((t * splits + z) * kAccumulators + e) * kThreads + thread], and counters[t] counts the
// tile's finished splits.
struct Splits {
  int count = 1, steps_each = 0;
  float* partials = nullptr;
  int* counters = nullptr;
};

// Adds the block's sums to its tile's other splits'. Returns whether this block is the tile's
// last, which then holds the tile's sums, added in split order, in acc.
template <int MT, int NT>
__device__ bool gather_splits(float (&acc)[MT][NT][4], const Splits& splits, std::int64_t tile) {
  constexpr int kAcc = Tile<MT, NT>::kAccumulators;
  float* flat = &acc[0][0][0];
  float* mine = splits.partials + (tile * splits.count + blockIdx.z) * kAcc * kThreads;
#pragma unroll
  for (int e = 0; e < kAcc; ++e) __stcg(mine + e * kThreads + threadIdx.x, flat[e]);
  __threadfence();  // the sums are visible GPU-wide before the count says so
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(splits.counters + tile, 1) == splits.count - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();
  const float* tile_partials = splits.partials + tile * splits.count * kAcc * kThreads;
#pragma unroll
  for (int e = 0; e < kAcc; ++e) flat[e] = __ldcg(tile_partials + e * kThreads + threadIdx.x);
  for (int z = 1; z < splits.count; ++z)
#pragma unroll
    for (int e = 0; e < kAcc; ++e)
      flat[e] += __ldcg(tile_partials + (z * kAcc + e) * kThreads + threadIdx.x);
  if (threadIdx.x == 0) splits.counters[tile] = 0;  // ready for the next launch
  return true;
}

template <int MT, int NT, class Output>
__global__ __launch_bounds__(kThreads) void tile_gemm_kernel(const __nv_bfloat16* x,
                                                             const __nv_bfloat16* w, Output output,
                                                             std::int64_t m, int in_features,
                                                             Splits splits) {
  using T = Tile<MT, NT>;
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(128) unsigned char shared[];
  const int first_step = static_cast<int>(blockIdx.z) * splits.steps_each;
  const int steps = min(in_features / kStepK - first_step, splits.steps_each);
  const std::int64_t row0 = std::int64_t{blockIdx.x} * T::kRowsX;
  constexpr int kColumns = T::kRowsW / Output::kWeightRowsPerColumn;  // of y per tile
  const std::int64_t first_column = std::int64_t{blockIdx.y} * kColumns;

  // A thread copies chunk t % 8 of tile rows t / 8 + 16 i: the same swizzle for all of them.
  const int chunk = threadIdx.x % kChunksPerRow, row_in_16 = threadIdx.x / kChunksPerRow;
  const __nv_bfloat16* w_src[T::kChunksW];
  std::uint32_t w_dst[T::kChunksW];
#pragma unroll
  for (int i = 0; i < T::kChunksW; ++i) {
    const int r = row_in_16 + 16 * i;
    w_src[i] = w + output.template weight_row<NT>(first_column, r) * in_features +
               first_step * kStepK + chunk * 8;
    w_dst[i] = T::kRowsX * 128 + swizzled(r, chunk);
  }
  const __nv_bfloat16* x_src[T::kChunksX];
  std::uint32_t x_dst[T::kChunksX];
  bool x_valid[T::kChunksX];
#pragma unroll
  for (int i = 0; i < T::kChunksX; ++i) {
    const int r = row_in_16 + 16 * i;
    x_valid[i] = row0 + r < m;
    x_src[i] = x + (x_valid[i] ? row0 + r : 0) * in_features + first_step * kStepK + chunk * 8;
    x_dst[i] = swizzled(r, chunk);
  }
  const auto load_w = [&](int step) {
    unsigned char* stage = shared + (step % kStages) * T::kStageBytes;
#pragma unroll
    for (int i = 0; i < T::kChunksW; ++i)
      detail::cp_async_16(stage + w_dst[i], w_src[i] + step * kStepK, true);
  };
  const auto load_x = [&](int step) {
    unsigned char* stage = shared + (step % kStages) * T::kStageBytes;
#pragma unroll
    for (int i = 0; i < T::kChunksX; ++i)
      detail::cp_async_16(stage + x_dst[i], x_src[i] + step * kStepK, x_valid[i]);
  };

  // No kernel writes W: the first stages' weights come in while the kernel before this one ends.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < steps) load_w(s);
  detail::wait_for_prior_grids();
  detail::allow_dependents();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_x(s);
    detail::cp_async_commit();  // group s: stage s (and group 0 all the early weights)
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / 2, warp_n = warp % 2;
  const std::uint32_t shared_base = shared_address(shared);
  float acc[MT][NT][4] = {};
  for (int step = 0; step < steps; ++step) {
    detail::cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `step` is in for every thread; stage step - 1 is free to refill
    if (const int next = step + kStages - 1; next < steps) {
      load_w(next);
      load_x(next);
    }
    detail::cp_async_commit();
    const std::uint32_t stage = shared_base + (step % kStages) * T::kStageBytes;
#pragma unroll
    for (int k = 0; k < kStepK / 16; ++k) {
      std::uint32_t a[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i)
        ldmatrix_x4(a[i], stage + swizzled(warp_m * 16 * MT + 16 * i + lane % 16, 2 * k + lane / 16));
      std::uint32_t b[NT][2];
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        std::uint32_t r[4];
        ldmatrix_x4(r, stage + T::kRowsX * 128 +
                           swizzled(warp_n * 8 * NT + 8 * j + (lane / 16) * 8 + lane % 8,
                                    2 * k + (lane / 8) % 2));
        b[j][0] = r[0];
        b[j][1] = r[1];
        b[j + 1][0] = r[2];
        b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k16<__nv_bfloat16>(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  detail::cp_async_wait<0>();  // no copy may outlive the block (the last groups are empty)

  if (splits.count > 1 &&
      !gather_splits<MT, NT>(acc, splits, std::int64_t{blockIdx.y} * gridDim.x + blockIdx.x))
    return;
  output.template store<MT, NT>(acc, m, row0 + warp_m * 16 * MT,
                                first_column + warp_n * (kColumns / 2));
}

// Rows of x and of W per tile, and the bytes a split launch of `tiles` tiles in `count` splits
// needs in the workspace.
struct TileFacts {
  int rows_x, rows_w, accumulators;
};
TileFacts facts_of(TileGemmShape shape) {
  switch (shape) {
    case TileGemmShape::m64n64: return {64, 64, Tile<2, 4>::kAccumulators};
    case TileGemmShape::m32n64: return {32, 64, Tile<1, 4>::kAccumulators};
    default: return {32, 32, Tile<1, 2>::kAccumulators};
  }
}
std::size_t split_bytes(const TileFacts& f, std::int64_t tiles, int count) {
  return kCounterBytes +
         static_cast<std::size_t>(tiles) * count * f.accumulators * kThreads * sizeof(float);
}

template <int MT, int NT, class Output>
cudaError_t launch_tile(const void* x, const void* w, Output output, std::int64_t m,
                        std::int64_t in_features, dim3 grid, Splits splits, cudaStream_t stream) {
  using T = Tile<MT, NT>;
  const auto kernel = tile_gemm_kernel<MT, NT, Output>;
  // Every tile kernel asks for the same (largest) shared memory carveout, so that one waiting on
  // another (dependent launch) can share its SMs without their reconfiguration.
  if (const cudaError_t err = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
      err != cudaSuccess)
    return err;
  if (const cudaError_t err = cudaFuncSetAttribute(
          kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
      err != cudaSuccess)
    return err;
  return detail::launch_dependent(kernel, grid, kThreads, T::kSharedBytes, stream,
                                  static_cast<const __nv_bfloat16*>(x),
                                  static_cast<const __nv_bfloat16*>(w), output, m,
                                  static_cast<int>(in_features), splits);
}

template <class Output>
cudaError_t launch(const void* x, const void* w, Output output, std::int64_t m,
                   std::int64_t in_features, const TileGemmWorkspace& workspace,
                   cudaStream_t stream, TileGemmPlan plan) {
  if (m < 0 || output.columns < 0 || plan.splits < 0) return cudaErrorInvalidValue;
  if (m == 0 || output.columns == 0) return cudaSuccess;
  if (output.out == nullptr || !tile_gemm_supports(in_features, x, w) ||
      in_features > 0x7FFFFFFF)
    return cudaErrorInvalidValue;
  int sm_count = 132;
  if (const cudaError_t err = detail::current_sm_count(sm_count); err != cudaSuccess) return err;
  const auto tiles_of = [&](TileGemmShape shape) {
    const TileFacts f = facts_of(shape);
    const std::int64_t columns = f.rows_w / Output::kWeightRowsPerColumn;
    return ((m + f.rows_x - 1) / f.rows_x) * ((output.columns + columns - 1) / columns);
  };
  // The largest tile that still gives every SM a block (64 rows of x only when m fills more than
  // 32: zero rows cost loads and tensor-core time); else the smallest.
  if (plan.shape == TileGemmShape::automatic)
    plan.shape = m > 32 && tiles_of(TileGemmShape::m64n64) >= sm_count ? TileGemmShape::m64n64
                 : tiles_of(TileGemmShape::m32n64) >= sm_count          ? TileGemmShape::m32n64
                                                                        : TileGemmShape::m32n32;
  const TileFacts f = facts_of(plan.shape);
  const std::int64_t tiles = tiles_of(plan.shape);
  const auto steps = static_cast<int>(in_features / kStepK);
  const bool room = tiles <= kMaxCountedTiles && workspace.data != nullptr &&
                    reinterpret_cast<std::uintptr_t>(workspace.data) % 16 == 0;
  if (plan.splits == 0) {  // enough splits for a block per SM, where the workspace holds them
    plan.splits = static_cast<int>(std::min<std::int64_t>(
        std::min(kMaxSplits, std::max(1, steps / kMinStepsPerSplit)),
        std::max<std::int64_t>(1, sm_count / tiles)));
    while (plan.splits > 1 && (!room || split_bytes(f, tiles, plan.splits) > workspace.bytes))
      --plan.splits;
  }
  Splits splits;
  splits.steps_each = (steps + plan.splits - 1) / plan.splits;
  splits.count = (steps + splits.steps_each - 1) / splits.steps_each;  // none left empty
  if (splits.count > 1) {
    if (!room || split_bytes(f, tiles, splits.count) > workspace.bytes)
      return cudaErrorInvalidValue;
    splits.counters = static_cast<int*>(workspace.data);
    splits.partials = reinterpret_cast<float*>(static_cast<char*>(workspace.data) + kCounterBytes);
  }
  const std::int64_t row_tiles = (m + f.rows_x - 1) / f.rows_x;
  if (row_tiles > detail::kMaxGridX || tiles / row_tiles > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(tiles / row_tiles),
                  static_cast<unsigned>(splits.count));
  switch (plan.shape) {
    case TileGemmShape::m64n64:
      return launch_tile<2, 4>(x, w, output, m, in_features, grid, splits, stream);
    case TileGemmShape::m32n64:
      return launch_tile<1, 4>(x, w, output, m, in_features, grid, splits, stream);
    case TileGemmShape::m32n32:
      return launch_tile<1, 2>(x, w, output, m, in_features, grid, splits, stream);
    case TileGemmShape::automatic: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool tile_gemm_supports(std::int64_t in_features, const void* x, const void* w) {
  const auto aligned = [](const void* p) {
    return p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  return in_features > 0 && in_features % kStepK == 0 && aligned(x) && aligned(w);
}

cudaError_t launch_tile_gemm(const void* x, const void* w, DType out_dtype, void* y,
                             std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                             const TileGemmWorkspace& workspace, cudaStream_t stream,
                             TileGemmPlan plan) {
  if (out_dtype == DType::f32)
    return launch(x, w, StoreProjection<float>{static_cast<float*>(y), out_features}, m,
                  in_features, workspace, stream, plan);
  if (out_dtype == DType::bf16)
    return launch(x, w,
                  StoreProjection<__nv_bfloat16>{static_cast<__nv_bfloat16*>(y), out_features},
                  m, in_features, workspace, stream, plan);
  return cudaErrorInvalidValue;
}

cudaError_t launch_tile_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                          std::int64_t m, std::int64_t width,
                                          std::int64_t in_features,
                                          const TileGemmWorkspace& workspace, cudaStream_t stream,
                                          TileGemmPlan plan) {
  return launch(x, gate_up_w, StoreSiluAndMul{static_cast<__nv_bfloat16*>(out), width}, m,
                in_features, workspace, stream, plan);
}

}  // namespace minivllm::cuda
