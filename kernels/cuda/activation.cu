#include "kernels/cuda/activation.cuh"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/silu.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::kVecElems;
using detail::Packet;
using detail::silu_times;
using detail::to_float;

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65536;

// Grid-stride over 16-byte vectors of out, two per step (i and i + stride; small launches get a
// grid that gives each thread one): vector i of row r = i / width_vecs reads its gate at vector
// r * 2 * width_vecs + (i - r * width_vecs) = r * width_vecs + i of gate_up and its up width_vecs
// further. Index is 32-bit when the vector count allows (64-bit division is slow).
template <class T, class Index>
__global__ void silu_and_mul_vec_kernel(const T* __restrict__ gate_up, T* __restrict__ out,
                                        Index n_vecs, Index width_vecs) {
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  constexpr int kVec = kVecElems<T>;
  using Vec = Packet<T, kVec>;
  const Vec* in = reinterpret_cast<const Vec*>(gate_up);
  const Index stride = Index{gridDim.x} * blockDim.x;
  for (Index i = blockIdx.x * Index{blockDim.x} + threadIdx.x; i < n_vecs; i += 2 * stride) {
    const Index index[2] = {i, i + stride};
    Vec gate[2], up[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (index[k] >= n_vecs) continue;
      const Index g = index[k] / width_vecs * width_vecs + index[k];
      gate[k] = in[g];
      up[k] = in[g + width_vecs];
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (index[k] >= n_vecs) continue;
      float g[kVec], u[kVec];
      detail::unpack<T, kVec>(gate[k], g);
      detail::unpack<T, kVec>(up[k], u);
#pragma unroll
      for (int e = 0; e < kVec; ++e) g[e] = silu_times(g[e], u[e]);
      reinterpret_cast<Vec*>(out)[index[k]] = detail::pack<T, kVec>(g);
    }
  }
}

// Any width or alignment, one element per step.
template <class T>
__global__ void silu_and_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out,
                                    std::int64_t n, std::int64_t width) {
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t row = i / width;
    const T* gate = gate_up + row * 2 * width + (i - row * width);
    out[i] = from_float<T>(silu_times(to_float(gate[0]), to_float(gate[width])));
  }
}

// Grid-stride loop: enough blocks to fill the GPU, never more than the data needs.
unsigned blocks_for(std::int64_t steps) {
  return static_cast<unsigned>(std::min((steps + kThreads - 1) / kThreads, kMaxBlocks));
}

template <class T>
cudaError_t launch_typed(const T* gate_up, T* out, std::int64_t rows, std::int64_t width,
                         cudaStream_t stream) {
  const std::int64_t n = rows * width;
  if (width % kVecElems<T> == 0 && detail::vec_aligned(gate_up, out)) {
    // Past as many vectors as the GPU holds threads, each thread of the vector kernel takes two,
    // their loads in flight together.
    std::int64_t gpu_threads = 0;
    if (const cudaError_t err = detail::current_resident_threads(gpu_threads); err != cudaSuccess)
      return err;
    const std::int64_t n_vecs = n / kVecElems<T>, width_vecs = width / kVecElems<T>;
    const unsigned blocks = blocks_for(n_vecs < gpu_threads ? n_vecs : (n_vecs + 1) / 2);
    // i + twice the grid's stride stays below 2^32.
    if (n_vecs <= INT32_MAX)
      return detail::launch_dependent(silu_and_mul_vec_kernel<T, std::uint32_t>, blocks, kThreads,
                                      0, stream, gate_up, out, static_cast<std::uint32_t>(n_vecs),
                                      static_cast<std::uint32_t>(width_vecs));
    return detail::launch_dependent(silu_and_mul_vec_kernel<T, std::int64_t>, blocks, kThreads, 0,
                                    stream, gate_up, out, n_vecs, width_vecs);
  }
  return detail::launch_dependent(silu_and_mul_kernel<T>, blocks_for(n), kThreads, 0, stream,
                                  gate_up, out, n, width);
}

}  // namespace

cudaError_t launch_silu_and_mul(DType dtype, const void* gate_up, void* out, std::int64_t rows,
                                std::int64_t width, cudaStream_t stream) {
  if (rows < 0 || width < 0) return cudaErrorInvalidValue;
  if (rows * width == 0) return cudaSuccess;
  if (gate_up == nullptr || out == nullptr) return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return launch_typed(static_cast<const T*>(gate_up), static_cast<T*>(out), rows, width, stream);
  });
}

}  // namespace minivllm::cuda
