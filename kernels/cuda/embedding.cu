#include "kernels/cuda/embedding.cuh"

#include <cmath>

#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;

// One block per token, its threads striding over the row.
template <class T>
__global__ void embedding_kernel(const T* table, std::int64_t vocab, std::int64_t dim,
                                 const std::int32_t* ids, T* out) {
  const std::int64_t token = blockIdx.x;
  const std::int32_t id = ids[token];
  T* row = out + token * dim;
  if (id < 0 || id >= vocab) {
    for (std::int64_t d = threadIdx.x; d < dim; d += blockDim.x) row[d] = from_float<T>(NAN);
    return;
  }
  const T* src = table + static_cast<std::int64_t>(id) * dim;
  for (std::int64_t d = threadIdx.x; d < dim; d += blockDim.x) row[d] = src[d];
}

}  // namespace

cudaError_t launch_embedding(DType dtype, const void* table, std::int64_t vocab, std::int64_t dim,
                             const std::int32_t* ids, std::int64_t num_tokens, void* out,
                             cudaStream_t stream) {
  if (vocab < 0 || dim < 0 || num_tokens < 0 || num_tokens > detail::kMaxGridX)
    return cudaErrorInvalidValue;
  if (num_tokens == 0 || dim == 0) return cudaSuccess;
  if (table == nullptr || ids == nullptr || out == nullptr) return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    embedding_kernel<T><<<static_cast<unsigned>(num_tokens), detail::threads_for_width(dim), 0,
                          stream>>>(static_cast<const T*>(table), vocab, dim, ids,
                                    static_cast<T*>(out));
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
