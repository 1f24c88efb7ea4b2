#include "kernels/cuda/skinny_gemm.cuh"

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"
#include "kernels/cuda/detail/silu.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;

// A block owns kRows rows of W (which ones, and what becomes of their sums, is its epilogue's
// choice, below); its threads split in_features in 16-byte chunks (8 bf16), each thread keeping
// kRows x m fp32 sums. Per step a thread has kUnroll x kRows weight loads in flight; x (m x in,
// a few KB) is re-read through L1 for every row tile. The sums are reduced across lanes with
// shuffles and across warps in shared memory.
constexpr int kThreads = 128;
constexpr int kRows = 4;
constexpr int kUnroll = 2;
constexpr int kChunk = 8;         // bf16 elements in 16 bytes
constexpr int kMaxSliceRows = 16;  // the largest m bucket; larger m runs in slices

// The 8 bf16 of a 16-byte vector as f32: a bf16 is the high half of an f32.
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float (&out)[kChunk]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    out[2 * j] = __uint_as_float(words[j] << 16);
    out[2 * j + 1] = __uint_as_float(words[j] & 0xFFFF0000u);
  }
}

// Sums each of the V values of v over the warp's lanes into out[V] (shared memory). A
// reduce-scatter: at each of the first log2(V) butterfly steps a lane keeps half of its values and
// sends the other half, so the warp spends about V shuffles instead of 5 V (V = 64 at m = 16).
// V is a power of two.
template <int V>
__device__ __forceinline__ void warp_sum_scatter(float* v, float* out) {
  const unsigned lane = threadIdx.x % 32;
  int base = 0;  // index of v[0] among the V values
#pragma unroll
  for (int step = 0, offset = 16; step < 5; ++step, offset /= 2) {
    const int half = V >> (step + 1);  // values kept after this step; 0: plain sums from here
    const bool upper = (lane & offset) != 0;
    if (half >= 1) {
#pragma unroll
      for (int j = 0; j < (V >> 1); ++j) {
        if (j >= half) break;
        const float send = upper ? v[j] : v[j + half];
        const float keep = upper ? v[j + half] : v[j];
        v[j] = keep + __shfl_xor_sync(detail::kFullWarp, send, offset);
      }
      if (upper) base += half;
    } else {
      v[0] += __shfl_xor_sync(detail::kFullWarp, v[0], offset);
    }
  }
  // A lane now holds the sums of v[base .. base + V / 32); when V < 32, lanes that differ only in
  // the bits of the plain steps hold the same sums: the lowest of them writes.
  constexpr int kHeld = V >= 32 ? V / 32 : 1;
  constexpr unsigned kSameMask = V >= 32 ? 0u : 32u / V - 1u;
  if ((lane & kSameMask) == 0) {
#pragma unroll
    for (int j = 0; j < kHeld; ++j) out[base + j] = v[j];
  }
}

// The block's sums: sum(i, r) is row i of x times the block's row r of W, its warps' partial sums
// added in a fixed order (the same for every row r and output, which the fused epilogue's
// bit-for-bit equality with the plain GEMM relies on).
template <int kSums>
struct BlockSums {
  const float (*partial)[kSums];
  __device__ float operator()(int i, int r) const {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kThreads / 32; ++k) sum += partial[k][i * kRows + r];
    return sum;
  }
};

// Epilogues: which rows of W a block reads, and what it makes of their sums. Each writes
// out [m, columns], kColumns consecutive columns per block (tile).
//
// The plain GEMM: out = the sums rounded to OutT, one column per row of W.
template <class OutT>
struct StoreProjection {
  static constexpr int kColumns = kRows;
  OutT* out;
  std::int64_t columns;

  __device__ std::int64_t weight_row(std::int64_t tile, int r) const {
    return min(tile * kRows + r, columns - 1);  // past the last row: re-read it
  }
  template <class Sums>
  __device__ void store(std::int64_t tile, int i, int c, const Sums& sum) const {
    const std::int64_t column = tile * kColumns + c;
    if (column < columns) out[i * columns + column] = from_float<OutT>(sum(i, c));
  }
};

// The gated MLP's activation: out = silu(gate) * up, W [2 * columns, in] holding the gate rows
// then the up rows; a block reads kRows / 2 gate rows and the up rows of the same columns. gate
// and up are rounded to bf16 as the plain GEMM's bf16 output stores them, then combined as
// silu_and_mul does: the same bits as the two kernels.
struct StoreSiluAndMul {
  static constexpr int kColumns = kRows / 2;
  __nv_bfloat16* out;
  std::int64_t columns;

  __device__ std::int64_t weight_row(std::int64_t tile, int r) const {
    const std::int64_t column = min(tile * kColumns + r % kColumns, columns - 1);
    return r < kColumns ? column : columns + column;
  }
  template <class Sums>
  __device__ void store(std::int64_t tile, int i, int c, const Sums& sum) const {
    const std::int64_t column = tile * kColumns + c;
    if (column >= columns) return;
    const float gate = __bfloat162float(__float2bfloat16_rn(sum(i, c)));
    const float up = __bfloat162float(__float2bfloat16_rn(sum(i, kColumns + c)));
    out[i * columns + column] = __float2bfloat16_rn(detail::silu_times(gate, up));
  }
};

// MB is the m bucket (rows of x the sums have room for); m <= MB at run time. Output is one of
// the epilogues above.
template <int MB, class Output>
__global__ __launch_bounds__(kThreads) void skinny_gemm_kernel(const uint4* x, const uint4* w,
                                                               Output output, int m, int chunks) {
  const std::int64_t tile = blockIdx.x;
  const uint4* w_rows[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) w_rows[r] = w + output.weight_row(tile, r) * chunks;

  // Every weight load of a step is issued before the first use.
  uint4 wv[kUnroll][kRows];
  const auto load_step = [&](int c) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int cu = c + u * kThreads;
#pragma unroll
      for (int r = 0; r < kRows; ++r)  // read once: stream
        wv[u][r] = cu < chunks ? __ldcs(w_rows[r] + cu) : uint4{};
    }
  };
  // No kernel writes W: its first step comes in while the kernel before this one finishes.
  load_step(threadIdx.x);
  detail::wait_for_prior_grids();
  detail::allow_dependents();

  float acc[MB][kRows] = {};
  for (int c = threadIdx.x; c < chunks; c += kThreads * kUnroll) {
    if (c != static_cast<int>(threadIdx.x)) load_step(c);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int cu = c + u * kThreads;
      if (cu >= chunks) break;
      float wf[kRows][kChunk];
#pragma unroll
      for (int r = 0; r < kRows; ++r) unpack_bf16x8(wv[u][r], wf[r]);
#pragma unroll
      for (int i = 0; i < MB; ++i) {
        if (i >= m) break;
        float xf[kChunk];
        unpack_bf16x8(__ldg(x + static_cast<std::int64_t>(i) * chunks + cu), xf);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int j = 0; j < kChunk; ++j) acc[i][r] = fmaf(xf[j], wf[r][j], acc[i][r]);
      }
    }
  }

  // Lane sums of the block: partial[warp][i * kRows + r].
  constexpr int kSums = MB * kRows;
  __shared__ float partial[kThreads / 32][kSums];
  warp_sum_scatter<kSums>(&acc[0][0], partial[threadIdx.x / 32]);
  __syncthreads();
  const BlockSums<kSums> sum{partial};
  for (int t = threadIdx.x; t < m * Output::kColumns; t += kThreads)
    output.store(tile, t / Output::kColumns, t % Output::kColumns, sum);
}

template <int MB, class Output>
cudaError_t launch_bucket(const uint4* x, const uint4* w, Output output, int m, unsigned tiles,
                          int chunks, cudaStream_t stream) {
  return detail::launch_dependent(skinny_gemm_kernel<MB, Output>, tiles, kThreads, 0, stream, x, w,
                                  output, m, chunks);
}

// One slice of at most kMaxSliceRows rows of x, in the smallest bucket that holds it.
template <class Output>
cudaError_t launch_slice(const uint4* x, const uint4* w, Output output, int m, unsigned tiles,
                         int chunks, cudaStream_t stream) {
  if (m == 1) return launch_bucket<1>(x, w, output, m, tiles, chunks, stream);
  if (m == 2) return launch_bucket<2>(x, w, output, m, tiles, chunks, stream);
  if (m <= 4) return launch_bucket<4>(x, w, output, m, tiles, chunks, stream);
  if (m <= 8) return launch_bucket<8>(x, w, output, m, tiles, chunks, stream);
  return launch_bucket<kMaxSliceRows>(x, w, output, m, tiles, chunks, stream);
}

// All m rows of x in slices of kMaxSliceRows, each reading W again.
template <class Output>
cudaError_t launch_slices(const void* x, const void* w, Output output, std::int64_t m,
                          std::int64_t in_features, cudaStream_t stream) {
  const std::int64_t tiles = (output.columns + Output::kColumns - 1) / Output::kColumns;
  if (m < 0 || output.columns < 0 || tiles > detail::kMaxGridX) return cudaErrorInvalidValue;
  if (m == 0 || output.columns == 0) return cudaSuccess;
  if (output.out == nullptr || x == nullptr || w == nullptr ||
      !skinny_gemm_supports(in_features, x, w))
    return cudaErrorInvalidValue;
  const auto chunks = static_cast<int>(in_features / kChunk);
  for (std::int64_t i0 = 0; i0 < m; i0 += kMaxSliceRows) {
    const auto rows = static_cast<int>(m - i0 < kMaxSliceRows ? m - i0 : kMaxSliceRows);
    Output slice = output;
    slice.out += i0 * output.columns;
    const cudaError_t err =
        launch_slice(static_cast<const uint4*>(x) + i0 * chunks, static_cast<const uint4*>(w),
                     slice, rows, static_cast<unsigned>(tiles), chunks, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace

bool skinny_gemm_supports(std::int64_t in_features, const void* x, const void* w) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return in_features > 0 && in_features % kChunk == 0 && in_features / kChunk <= 0x7FFFFFFF &&
         aligned(x) && aligned(w);
}

cudaError_t launch_skinny_gemm(const void* x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream) {
  if (out_dtype == DType::f32)
    return launch_slices(x, w, StoreProjection<float>{static_cast<float*>(y), out_features}, m,
                         in_features, stream);
  if (out_dtype == DType::bf16)
    return launch_slices(
        x, w, StoreProjection<__nv_bfloat16>{static_cast<__nv_bfloat16*>(y), out_features}, m,
        in_features, stream);
  return cudaErrorInvalidValue;
}

cudaError_t launch_skinny_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                            std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream) {
  return launch_slices(x, gate_up_w, StoreSiluAndMul{static_cast<__nv_bfloat16*>(out), width}, m,
                       in_features, stream);
}

}  // namespace minivllm::cuda
