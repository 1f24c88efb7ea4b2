#include "kernels/cuda/embedding.cuh"

#include <cmath>
#include <cstdint>

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

using detail::kVecElems;
using detail::Packet;

constexpr int kWarpsPerBlock = 4;

// One warp per token, its lanes striding over the row in packets of kElems elements (16 bytes
// when the rows allow). table and out never overlap (a gather into its own table makes no sense).
template <class T, int kElems>
__global__ void embedding_kernel(const T* __restrict__ table, std::int64_t first_id,
                                 std::int64_t rows, std::int64_t vocab, int row_packets,
                                 const std::int32_t* ids, const std::int32_t* fed,
                                 std::int64_t num_tokens, T* __restrict__ out) {
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  using Unit = Packet<T, kElems>;
  const std::int64_t token = blockIdx.x * std::int64_t{blockDim.x / 32} + threadIdx.x / 32;
  if (token >= num_tokens) return;
  std::int32_t id = ids[token];
  if (id < 0 && fed != nullptr) id = fed[-1 - static_cast<std::int64_t>(id)];
  Unit* row = reinterpret_cast<Unit*>(out) + token * row_packets;
  const std::int64_t local = static_cast<std::int64_t>(id) - first_id;
  if (id < 0 || id >= vocab || local < 0 || local >= rows) {
    float fill[kElems];
#pragma unroll
    for (float& v : fill) v = id < 0 || id >= vocab ? NAN : 0.0f;
    const Unit value = detail::pack<T, kElems>(fill);
    for (int d = threadIdx.x % 32; d < row_packets; d += 32) row[d] = value;
    return;
  }
  const Unit* src = reinterpret_cast<const Unit*>(table) + local * row_packets;
#pragma unroll 4
  for (int d = threadIdx.x % 32; d < row_packets; d += 32) row[d] = src[d];
}

template <class T>
cudaError_t launch_typed(const T* table, std::int64_t first_id, std::int64_t rows,
                         std::int64_t vocab, std::int64_t dim, const std::int32_t* ids,
                         const std::int32_t* fed, std::int64_t num_tokens, T* out,
                         cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((num_tokens + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (dim % kVecElems<T> == 0 && detail::vec_aligned(table, out))
    return detail::launch_dependent(embedding_kernel<T, kVecElems<T>>, blocks, kWarpsPerBlock * 32,
                                    0, stream, table, first_id, rows, vocab,
                                    static_cast<int>(dim / kVecElems<T>), ids, fed, num_tokens, out);
  return detail::launch_dependent(embedding_kernel<T, 1>, blocks, kWarpsPerBlock * 32, 0, stream,
                                  table, first_id, rows, vocab, static_cast<int>(dim), ids, fed,
                                  num_tokens, out);
}

}  // namespace

cudaError_t launch_embedding(DType dtype, const void* table, std::int64_t first_id,
                             std::int64_t rows, std::int64_t vocab, std::int64_t dim,
                             const std::int32_t* ids, const std::int32_t* fed,
                             std::int64_t num_tokens, void* out, cudaStream_t stream) {
  if (first_id < 0 || rows < 0 || first_id + rows > vocab || dim < 0 || dim > INT32_MAX ||
      num_tokens < 0 || num_tokens > detail::kMaxGridX)
    return cudaErrorInvalidValue;
  if (num_tokens == 0 || dim == 0) return cudaSuccess;
  if (table == nullptr || ids == nullptr || out == nullptr) return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return launch_typed(static_cast<const T*>(table), first_id, rows, vocab, dim, ids, fed,
                        num_tokens, static_cast<T*>(out), stream);
  });
}

}  // namespace minivllm::cuda
