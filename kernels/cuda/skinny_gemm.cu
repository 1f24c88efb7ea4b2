#include "kernels/cuda/skinny_gemm.cuh"

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/l2_prefetch.cuh"
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

// Where the rows of x come from. A block reads each of its threads' 16-byte chunks of every row.
//
// x as it is.
struct PlainRows {
  static constexpr bool kNormed = false;
  const uint4* x;

  PlainRows slice(std::int64_t first_chunk) const { return {x + first_chunk}; }
  __device__ void load(int i, int c, int chunks, float (&xf)[kChunk]) const {
    unpack_bf16x8(__ldg(x + static_cast<std::int64_t>(i) * chunks + c), xf);
  }
};

// A pre-norm block's input, normalized on the way in: row i is h_i * weight / rms(h_i), h = x +
// residual rounded to bf16 (x null: h = residual). No pass over the rows precedes the GEMM: a
// thread multiplies its chunks of h by the weight as it reads them and adds up their squares, and
// the block's sums are scaled by each row's 1 / rms at the end. Block 0 stores h (with x).
struct NormedRows {
  static constexpr bool kNormed = true;
  const uint4* x;
  const uint4* residual;
  const uint4* weight;
  uint4* residual_out;
  float eps;

  NormedRows slice(std::int64_t first_chunk) const {
    return {x != nullptr ? x + first_chunk : nullptr, residual + first_chunk, weight,
            x != nullptr ? residual_out + first_chunk : nullptr, eps};
  }
  // xf = chunk c of row i's h times the weight; squares += its squares.
  __device__ void load(int i, int c, int chunks, const float (&wf)[kChunk], float (&xf)[kChunk],
                       float& squares) const {
    const std::int64_t at = static_cast<std::int64_t>(i) * chunks + c;
    float h[kChunk];
    unpack_bf16x8(__ldg(residual + at), h);
    if (x != nullptr) {
      float xv[kChunk];
      unpack_bf16x8(__ldg(x + at), xv);
      unsigned words[kChunk / 2];
#pragma unroll
      for (int j = 0; j < kChunk; j += 2) {  // as add_rms_norm stores the residual stream
        const __nv_bfloat16 lo = __float2bfloat16_rn(h[j] + xv[j]);
        const __nv_bfloat16 hi = __float2bfloat16_rn(h[j + 1] + xv[j + 1]);
        h[j] = __bfloat162float(lo);
        h[j + 1] = __bfloat162float(hi);
        words[j / 2] = static_cast<unsigned>(__bfloat16_as_ushort(lo)) |
                       static_cast<unsigned>(__bfloat16_as_ushort(hi)) << 16;
      }
      if (blockIdx.x == 0) residual_out[at] = uint4{words[0], words[1], words[2], words[3]};
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      squares = fmaf(h[j], h[j], squares);
      xf[j] = h[j] * wf[j];
    }
  }
};

// Row i's sums times its 1 / rms (rms_norm's formula), from the block's squares [warp][row].
template <int kSums, int MB>
struct NormedSums {
  BlockSums<kSums> sums;
  const float (*squares)[MB];
  float features;
  float eps;
  __device__ float operator()(int i, int r) const {
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < kThreads / 32; ++k) total += squares[k][i];
    return sums(i, r) * rsqrtf(total / features + eps);
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

// MB is the m bucket (rows of x the sums have room for); m <= MB at run time. Rows is PlainRows
// or NormedRows, Output one of the epilogues above.
template <int MB, class Rows, class Output>
__global__ __launch_bounds__(kThreads) void skinny_gemm_kernel(Rows rows, const uint4* w,
                                                               Output output, int m, int chunks,
                                                               L2Prefetch next) {
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
  detail::prefetch_block_share(next);
  detail::wait_for_prior_grids();
  detail::allow_dependents();

  float acc[MB][kRows] = {};
  float squares[MB] = {};  // NormedRows: this thread's share of each row's sum of squares
  for (int c = threadIdx.x; c < chunks; c += kThreads * kUnroll) {
    if (c != static_cast<int>(threadIdx.x)) load_step(c);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int cu = c + u * kThreads;
      if (cu >= chunks) break;
      float wf[kRows][kChunk];
#pragma unroll
      for (int r = 0; r < kRows; ++r) unpack_bf16x8(wv[u][r], wf[r]);
      float norm_weight[kChunk];
      if constexpr (Rows::kNormed) unpack_bf16x8(__ldg(rows.weight + cu), norm_weight);
#pragma unroll
      for (int i = 0; i < MB; ++i) {
        if (i >= m) break;
        float xf[kChunk];
        if constexpr (Rows::kNormed) rows.load(i, cu, chunks, norm_weight, xf, squares[i]);
        else rows.load(i, cu, chunks, xf);
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
  const BlockSums<kSums> sum{partial};
  if constexpr (Rows::kNormed) {
    __shared__ float row_squares[kThreads / 32][MB];
#pragma unroll
    for (int i = 0; i < MB; ++i) {
      const float total = detail::warp_sum(squares[i]);
      if (threadIdx.x % 32 == 0) row_squares[threadIdx.x / 32][i] = total;
    }
    __syncthreads();
    const NormedSums<kSums, MB> normed{sum, row_squares, static_cast<float>(chunks * kChunk),
                                       rows.eps};
    for (int t = threadIdx.x; t < m * Output::kColumns; t += kThreads)
      output.store(tile, t / Output::kColumns, t % Output::kColumns, normed);
  } else {
    __syncthreads();
    for (int t = threadIdx.x; t < m * Output::kColumns; t += kThreads)
      output.store(tile, t / Output::kColumns, t % Output::kColumns, sum);
  }
}

template <int MB, class Rows, class Output>
cudaError_t launch_bucket(const Rows& rows, const uint4* w, Output output, int m, unsigned tiles,
                          int chunks, L2Prefetch next, cudaStream_t stream) {
  return detail::launch_dependent(skinny_gemm_kernel<MB, Rows, Output>, tiles, kThreads, 0,
                                  stream, rows, w, output, m, chunks, next);
}

// One slice of at most kMaxSliceRows rows of x, in the smallest bucket that holds it.
template <class Rows, class Output>
cudaError_t launch_slice(const Rows& rows, const uint4* w, Output output, int m, unsigned tiles,
                         int chunks, L2Prefetch next, cudaStream_t stream) {
  if (m == 1) return launch_bucket<1>(rows, w, output, m, tiles, chunks, next, stream);
  if (m == 2) return launch_bucket<2>(rows, w, output, m, tiles, chunks, next, stream);
  if (m <= 4) return launch_bucket<4>(rows, w, output, m, tiles, chunks, next, stream);
  if (m <= 8) return launch_bucket<8>(rows, w, output, m, tiles, chunks, next, stream);
  return launch_bucket<kMaxSliceRows>(rows, w, output, m, tiles, chunks, next, stream);
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Rows of in_features the kernel reads in whole 16-byte chunks.
bool features_supported(std::int64_t in_features) {
  return in_features > 0 && in_features % kChunk == 0 && in_features / kChunk <= 0x7FFFFFFF;
}

// Whether the rows can be read as the kernel reads them.
bool rows_readable(const PlainRows& rows) { return rows.x != nullptr && aligned(rows.x); }
bool rows_readable(const NormedRows& rows) {
  return rows.residual != nullptr && rows.weight != nullptr && aligned(rows.residual) &&
         aligned(rows.weight) && aligned(rows.x) &&
         (rows.x == nullptr || (rows.residual_out != nullptr && aligned(rows.residual_out)));
}

// All m rows of x in slices of kMaxSliceRows, each reading W again; the first asks for `next`.
template <class Rows, class Output>
cudaError_t launch_slices(const Rows& rows, const void* w, Output output, std::int64_t m,
                          std::int64_t in_features, L2Prefetch next, cudaStream_t stream) {
  const std::int64_t tiles = (output.columns + Output::kColumns - 1) / Output::kColumns;
  if (m < 0 || output.columns < 0 || tiles > detail::kMaxGridX) return cudaErrorInvalidValue;
  if (m == 0 || output.columns == 0) return cudaSuccess;
  if (output.out == nullptr || w == nullptr || !aligned(w) || !rows_readable(rows) ||
      !features_supported(in_features) || !l2_prefetch_valid(next))
    return cudaErrorInvalidValue;
  const auto chunks = static_cast<int>(in_features / kChunk);
  for (std::int64_t i0 = 0; i0 < m; i0 += kMaxSliceRows) {
    const auto slice_rows = static_cast<int>(m - i0 < kMaxSliceRows ? m - i0 : kMaxSliceRows);
    Output slice = output;
    slice.out += i0 * output.columns;
    const cudaError_t err = launch_slice(rows.slice(i0 * chunks), static_cast<const uint4*>(w),
                                         slice, slice_rows, static_cast<unsigned>(tiles), chunks,
                                         i0 == 0 ? next : L2Prefetch{}, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

NormedRows normed_rows(const RmsNormedRows& r) {
  return {static_cast<const uint4*>(r.x), static_cast<const uint4*>(r.residual),
          static_cast<const uint4*>(r.weight), static_cast<uint4*>(r.residual_out), r.eps};
}

// The plain projection's launch for any rows.
template <class Rows>
cudaError_t launch_projection(const Rows& rows, const void* w, DType out_dtype, void* y,
                              std::int64_t m, std::int64_t out_features,
                              std::int64_t in_features, L2Prefetch next, cudaStream_t stream) {
  if (out_dtype == DType::f32)
    return launch_slices(rows, w, StoreProjection<float>{static_cast<float*>(y), out_features}, m,
                         in_features, next, stream);
  if (out_dtype == DType::bf16)
    return launch_slices(
        rows, w, StoreProjection<__nv_bfloat16>{static_cast<__nv_bfloat16*>(y), out_features}, m,
        in_features, next, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

bool skinny_gemm_supports(std::int64_t in_features, const void* x, const void* w) {
  return features_supported(in_features) && aligned(x) && aligned(w);
}

cudaError_t launch_skinny_gemm(const void* x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream, L2Prefetch next) {
  return launch_projection(PlainRows{static_cast<const uint4*>(x)}, w, out_dtype, y, m,
                           out_features, in_features, next, stream);
}

cudaError_t launch_skinny_gemm(const RmsNormedRows& x, const void* w, DType out_dtype, void* y,
                               std::int64_t m, std::int64_t out_features, std::int64_t in_features,
                               cudaStream_t stream, L2Prefetch next) {
  return launch_projection(normed_rows(x), w, out_dtype, y, m, out_features, in_features, next,
                           stream);
}

cudaError_t launch_skinny_gemm_silu_and_mul(const void* x, const void* gate_up_w, void* out,
                                            std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream,
                                            L2Prefetch next) {
  return launch_slices(PlainRows{static_cast<const uint4*>(x)}, gate_up_w,
                       StoreSiluAndMul{static_cast<__nv_bfloat16*>(out), width}, m, in_features,
                       next, stream);
}

cudaError_t launch_skinny_gemm_silu_and_mul(const RmsNormedRows& x, const void* gate_up_w,
                                            void* out, std::int64_t m, std::int64_t width,
                                            std::int64_t in_features, cudaStream_t stream,
                                            L2Prefetch next) {
  return launch_slices(normed_rows(x), gate_up_w,
                       StoreSiluAndMul{static_cast<__nv_bfloat16*>(out), width}, m, in_features,
                       next, stream);
}

}  // namespace minivllm::cuda
