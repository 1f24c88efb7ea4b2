#include "kernels/cuda/rms_norm.cuh"

#include <algorithm>

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::kVecElems;
using detail::Packet;
using detail::to_float;

// Rows of whole 16-byte vectors take the vector kernel: a warp per row for up to kMaxWarpRowVecs
// vectors once there are kMinWarpRows rows (a row per warp keeps many loads in flight without
// block barriers), else a block per row of up to kMaxRowThreads threads with at most
// kMaxVecsPerThread vectors each (few rows: more threads share a row's latency-bound work).
// Longer rows, other shapes and unaligned pointers take the scalar kernel.
constexpr int kMaxWarpRowVecs = 128;
constexpr std::int64_t kMinWarpRows = 1024;
constexpr int kMaxRowThreads = 256;
constexpr int kMaxVecsPerThread = 8;

// Threads of a row (a warp, or the block when kBlockRow) split it into 16-byte vectors, at most
// kVecsPerThread each, held in registers between the sum of squares and the scaling so the row is
// read once. All loads (x, the residual, the weight) go out before any use: one memory round trip.
// With kAdd, the stored sum residual + x (rounded to T) is what gets normalized. Each thread writes
// only the elements it read, so out may alias x.
template <class T, bool kAdd, bool kBlockRow, int kVecsPerThread>
__global__ void rms_norm_vec_kernel(const T* x, T* residual, const T* weight, T* out,
                                    std::int64_t rows, int row_vecs, float eps) {
  constexpr int kVec = kVecElems<T>;
  using Vec = Packet<T, kVec>;
  const int stride = kBlockRow ? static_cast<int>(blockDim.x) : 32;
  const int rank = static_cast<int>(threadIdx.x) % stride;
  const std::int64_t row =
      kBlockRow ? std::int64_t{blockIdx.x}
                : blockIdx.x * std::int64_t{blockDim.x / 32} + threadIdx.x / 32;
  // No kernel writes the norm weight: it comes in while the kernel before this one finishes.
  const Vec* weights = reinterpret_cast<const Vec*>(weight);
  Vec x_vecs[kVecsPerThread], residual_vecs[kVecsPerThread], weight_vecs[kVecsPerThread];
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int col = rank + j * stride;
    if (col < row_vecs) weight_vecs[j] = weights[col];
  }
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  if (row >= rows) return;  // whole warps exit; a block's row always exists
  const std::int64_t offset = row * row_vecs;
  const Vec* x_row = reinterpret_cast<const Vec*>(x) + offset;
  Vec* residual_row = kAdd ? reinterpret_cast<Vec*>(residual) + offset : nullptr;
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int col = rank + j * stride;
    if (col >= row_vecs) continue;
    x_vecs[j] = x_row[col];
    if constexpr (kAdd) residual_vecs[j] = residual_row[col];
  }
  float v[kVecsPerThread][kVec];
  float sum_squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int col = rank + j * stride;
    if (col >= row_vecs) continue;
    detail::unpack<T, kVec>(x_vecs[j], v[j]);
    if constexpr (kAdd) {
      float r[kVec];
      detail::unpack<T, kVec>(residual_vecs[j], r);
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[j][e] = to_float(from_float<T>(r[e] + v[j][e]));
      residual_row[col] = detail::pack<T, kVec>(v[j]);
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum_squares += v[j][e] * v[j][e];
  }
  float total;
  if constexpr (kBlockRow) total = detail::block_sum(sum_squares);
  else total = detail::warp_sum(sum_squares);
  const float inv_rms = rsqrtf(total / static_cast<float>(row_vecs * kVec) + eps);
  Vec* out_row = reinterpret_cast<Vec*>(out) + offset;
#pragma unroll
  for (int j = 0; j < kVecsPerThread; ++j) {
    const int col = rank + j * stride;
    if (col >= row_vecs) continue;
    float w[kVec];
    detail::unpack<T, kVec>(weight_vecs[j], w);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[j][e] = v[j][e] * inv_rms * w[e];
    out_row[col] = detail::pack<T, kVec>(v[j]);
  }
}

// Any shape: one block per row, two passes over it (the second reads back what the first read or
// stored). Each thread touches the same elements in both passes, so out may alias x.
template <class T>
__global__ void rms_norm_kernel(const T* x, T* residual, const T* weight, T* out,
                                std::int64_t dim, float eps) {
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  const std::int64_t offset = blockIdx.x * dim;
  const T* x_row = x + offset;
  T* residual_row = residual != nullptr ? residual + offset : nullptr;
  float sum_squares = 0.0f;
  for (std::int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float v = to_float(x_row[d]);
    if (residual_row != nullptr) {
      const T sum = from_float<T>(to_float(residual_row[d]) + v);
      residual_row[d] = sum;
      v = to_float(sum);
    }
    sum_squares += v * v;
  }
  const float inv_rms = rsqrtf(detail::block_sum(sum_squares) / static_cast<float>(dim) + eps);
  const T* normed = residual_row != nullptr ? residual_row : x_row;
  T* out_row = out + offset;
  for (std::int64_t d = threadIdx.x; d < dim; d += blockDim.x)
    out_row[d] = from_float<T>(to_float(normed[d]) * inv_rms * to_float(weight[d]));
}

// Warps per block for one-warp rows: up to 4, fewer while the grid would have under ~4 blocks
// per SM of an H200 (132 SMs).
int warps_per_block(std::int64_t rows) {
  return static_cast<int>(std::clamp<std::int64_t>(rows / 512, 1, 4));
}

template <class T>
struct Args {
  const T* x;
  T* residual;
  const T* weight;
  T* out;
  std::int64_t rows, dim;
  float eps;
};

template <class T, bool kBlockRow, int kVecsPerThread>
cudaError_t launch_vec(const Args<T>& a, int threads, std::int64_t blocks, cudaStream_t stream) {
  const int row_vecs = static_cast<int>(a.dim / kVecElems<T>);
  if (a.residual != nullptr)
    return detail::launch_dependent(rms_norm_vec_kernel<T, true, kBlockRow, kVecsPerThread>,
                                    static_cast<unsigned>(blocks), threads, 0, stream, a.x,
                                    a.residual, a.weight, a.out, a.rows, row_vecs, a.eps);
  return detail::launch_dependent(rms_norm_vec_kernel<T, false, kBlockRow, kVecsPerThread>,
                                  static_cast<unsigned>(blocks), threads, 0, stream, a.x,
                                  a.residual, a.weight, a.out, a.rows, row_vecs, a.eps);
}

// A warp per row, the fewest registers that hold the row.
template <class T>
cudaError_t launch_warp_rows(const Args<T>& a, std::int64_t row_vecs, cudaStream_t stream) {
  const int warps = warps_per_block(a.rows);
  const std::int64_t blocks = (a.rows + warps - 1) / warps;
  if (row_vecs <= 32) return launch_vec<T, false, 1>(a, 32 * warps, blocks, stream);
  if (row_vecs <= 64) return launch_vec<T, false, 2>(a, 32 * warps, blocks, stream);
  return launch_vec<T, false, kMaxWarpRowVecs / 32>(a, 32 * warps, blocks, stream);
}

// A block per row: one vector per thread up to kMaxRowThreads vectors, then 2, 4 or 8.
template <class T>
cudaError_t launch_block_rows(const Args<T>& a, std::int64_t row_vecs, cudaStream_t stream) {
  const int threads =
      static_cast<int>(std::min<std::int64_t>((row_vecs + 31) / 32 * 32, kMaxRowThreads));
  if (row_vecs <= threads) return launch_vec<T, true, 1>(a, threads, a.rows, stream);
  if (row_vecs <= 2 * threads) return launch_vec<T, true, 2>(a, threads, a.rows, stream);
  if (row_vecs <= 4 * threads) return launch_vec<T, true, 4>(a, threads, a.rows, stream);
  return launch_vec<T, true, kMaxVecsPerThread>(a, threads, a.rows, stream);
}

template <class T>
cudaError_t launch_typed(const Args<T>& a, cudaStream_t stream) {
  const std::int64_t row_vecs = a.dim / kVecElems<T>;
  if (a.dim % kVecElems<T> == 0 && row_vecs <= kMaxRowThreads * kMaxVecsPerThread &&
      detail::vec_aligned(a.x, a.residual, a.weight, a.out)) {
    if (row_vecs <= kMaxWarpRowVecs && a.rows >= kMinWarpRows)
      return launch_warp_rows(a, row_vecs, stream);
    return launch_block_rows(a, row_vecs, stream);
  }
  return detail::launch_dependent(rms_norm_kernel<T>, static_cast<unsigned>(a.rows),
                                  detail::threads_for_width(a.dim), 0, stream, a.x, a.residual,
                                  a.weight, a.out, a.dim, a.eps);
}

cudaError_t launch(DType dtype, const void* x, void* residual, const void* weight, void* out,
                   std::int64_t rows, std::int64_t dim, float eps, cudaStream_t stream) {
  if (rows < 0 || dim < 0 || rows > detail::kMaxGridX) return cudaErrorInvalidValue;
  if (rows == 0 || dim == 0) return cudaSuccess;
  if (x == nullptr || weight == nullptr || out == nullptr) return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return launch_typed(Args<T>{static_cast<const T*>(x), static_cast<T*>(residual),
                                static_cast<const T*>(weight), static_cast<T*>(out), rows, dim,
                                eps},
                        stream);
  });
}

}  // namespace

cudaError_t launch_rms_norm(DType dtype, const void* x, const void* weight, void* out,
                            std::int64_t rows, std::int64_t dim, float eps, cudaStream_t stream) {
  return launch(dtype, x, nullptr, weight, out, rows, dim, eps, stream);
}

cudaError_t launch_add_rms_norm(DType dtype, const void* x, void* residual, const void* weight,
                                void* out, std::int64_t rows, std::int64_t dim, float eps,
                                cudaStream_t stream) {
  if (residual == nullptr) return cudaErrorInvalidValue;
  return launch(dtype, x, residual, weight, out, rows, dim, eps, stream);
}

}  // namespace minivllm::cuda
