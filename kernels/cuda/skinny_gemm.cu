#include "kernels/cuda/skinny_gemm.cuh"

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;

// A block owns kRows consecutive rows of W; its threads split in_features in 16-byte chunks (8
// bf16), each thread keeping kRows x m fp32 sums. Per step a thread has kUnroll x kRows weight
// loads in flight; x (m x in, a few KB) is re-read through L1 for every row tile. The sums are
// reduced across lanes with shuffles and across warps in shared memory.
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

// MB is the m bucket (rows of x the sums have room for); m <= MB at run time.
template <int MB, class OutT>
__global__ __launch_bounds__(kThreads) void skinny_gemm_kernel(const uint4* x, const uint4* w,
                                                               OutT* y, int m,
                                                               std::int64_t out_features,
                                                               int chunks) {
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const uint4* w_rows[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r)  // past the last row: re-read it, never write it
    w_rows[r] = w + min(row0 + r, out_features - 1) * chunks;

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
  for (int t = threadIdx.x; t < m * kRows; t += kThreads) {
    const int i = t / kRows, r = t % kRows;
    const std::int64_t row = row0 + r;
    if (row >= out_features) continue;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kThreads / 32; ++k) sum += partial[k][t];
    y[i * out_features + row] = from_float<OutT>(sum);
  }
}

template <int MB, class OutT>
cudaError_t launch_bucket(const uint4* x, const uint4* w, OutT* y, int m, std::int64_t out_features,
                          int chunks, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((out_features + kRows - 1) / kRows);
  return detail::launch_dependent(skinny_gemm_kernel<MB, OutT>, blocks, kThreads, 0, stream, x, w,
                                  y, m, out_features, chunks);
}

// One slice of at most kMaxSliceRows rows of x, in the smallest bucket that holds it.
template <class OutT>
cudaError_t launch_slice(const uint4* x, const uint4* w, OutT* y, int m, std::int64_t out_features,
                         int chunks, cudaStream_t stream) {
  if (m == 1) return launch_bucket<1>(x, w, y, m, out_features, chunks, stream);
  if (m == 2) return launch_bucket<2>(x, w, y, m, out_features, chunks, stream);
  if (m <= 4) return launch_bucket<4>(x, w, y, m, out_features, chunks, stream);
  if (m <= 8) return launch_bucket<8>(x, w, y, m, out_features, chunks, stream);
  return launch_bucket<kMaxSliceRows>(x, w, y, m, out_features, chunks, stream);
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
  if (m < 0 || out_features < 0 || (out_features + kRows - 1) / kRows > detail::kMaxGridX)
    return cudaErrorInvalidValue;
  if (m == 0 || out_features == 0) return cudaSuccess;
  if (y == nullptr || x == nullptr || w == nullptr || !skinny_gemm_supports(in_features, x, w))
    return cudaErrorInvalidValue;
  if (out_dtype != DType::bf16 && out_dtype != DType::f32) return cudaErrorInvalidValue;
  const auto chunks = static_cast<int>(in_features / kChunk);
  const auto* w_vec = static_cast<const uint4*>(w);
  for (std::int64_t i0 = 0; i0 < m; i0 += kMaxSliceRows) {
    const auto rows = static_cast<int>(m - i0 < kMaxSliceRows ? m - i0 : kMaxSliceRows);
    const auto* x_vec = static_cast<const uint4*>(x) + i0 * chunks;
    const std::int64_t y_offset = i0 * out_features;
    const cudaError_t err =
        out_dtype == DType::f32
            ? launch_slice(x_vec, w_vec, static_cast<float*>(y) + y_offset, rows, out_features,
                           chunks, stream)
            : launch_slice(x_vec, w_vec, static_cast<__nv_bfloat16*>(y) + y_offset, rows,
                           out_features, chunks, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace minivllm::cuda
