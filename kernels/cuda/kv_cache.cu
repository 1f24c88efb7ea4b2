#include "kernels/cuda/kv_cache.cuh"

#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

// One block per token, its threads striding over the row.
template <class T>
__global__ void write_kv_kernel(const T* k, const T* v, const std::int64_t* slot_mapping,
                                std::int64_t width, T* key_cache, T* value_cache,
                                std::int64_t num_slots) {
  const std::int64_t token = blockIdx.x;
  const std::int64_t slot = slot_mapping[token];
  if (slot < 0 || slot >= num_slots) return;
  const std::int64_t src = token * width, dst = slot * width;
  for (std::int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    key_cache[dst + i] = k[src + i];
    value_cache[dst + i] = v[src + i];
  }
}

}  // namespace

cudaError_t launch_write_kv(DType dtype, const void* k, const void* v,
                            const std::int64_t* slot_mapping, std::int64_t num_tokens,
                            std::int64_t width, void* key_cache, void* value_cache,
                            std::int64_t num_slots, cudaStream_t stream) {
  if (num_tokens < 0 || width < 0 || num_slots < 0 || num_tokens > detail::kMaxGridX)
    return cudaErrorInvalidValue;
  if (num_tokens == 0 || width == 0) return cudaSuccess;
  if (k == nullptr || v == nullptr || slot_mapping == nullptr || key_cache == nullptr ||
      value_cache == nullptr)
    return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    write_kv_kernel<T><<<static_cast<unsigned>(num_tokens), detail::threads_for_width(width), 0,
                         stream>>>(static_cast<const T*>(k), static_cast<const T*>(v),
                                   slot_mapping, width, static_cast<T*>(key_cache),
                                   static_cast<T*>(value_cache), num_slots);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
