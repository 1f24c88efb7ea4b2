#include "kernels/cuda/rms_norm.cuh"

#include "kernels/cuda/detail/element.cuh"
#include "kernels/cuda/detail/reduce.cuh"

namespace minivllm::cuda {
namespace {

using detail::from_float;
using detail::to_float;

// One block per row. With a residual, the first pass stores residual + x and the second reads it
// back. Each thread touches the same elements in both passes, so out may alias x.
template <class T>
__global__ void rms_norm_kernel(const T* x, T* residual, const T* weight, T* out,
                                std::int64_t dim, float eps) {
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

cudaError_t launch(DType dtype, const void* x, void* residual, const void* weight, void* out,
                   std::int64_t rows, std::int64_t dim, float eps, cudaStream_t stream) {
  if (rows < 0 || dim < 0 || rows > detail::kMaxGridX) return cudaErrorInvalidValue;
  if (rows == 0 || dim == 0) return cudaSuccess;
  if (x == nullptr || weight == nullptr || out == nullptr) return cudaErrorInvalidValue;
  return detail::dispatch_element_type(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    rms_norm_kernel<T><<<static_cast<unsigned>(rows), detail::threads_for_width(dim), 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(residual), static_cast<const T*>(weight),
        static_cast<T*>(out), dim, eps);
    return cudaGetLastError();
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
