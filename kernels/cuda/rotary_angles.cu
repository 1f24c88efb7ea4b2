#include "kernels/cuda/rotary_angles.cuh"

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/element.cuh"

namespace minivllm::cuda {
namespace {

constexpr int kThreads = 256;

// A thread per (token, frequency).
__global__ void __launch_bounds__(kThreads)
    rotary_angles_kernel(const std::int32_t* positions, const float* inv_freq,
                         std::int64_t num_tokens, int half, float* out) {
  const std::int64_t i = blockIdx.x * std::int64_t{kThreads} + threadIdx.x;
  const bool has_angle = i < num_tokens * half;
  const std::int64_t token = has_angle ? i / half : 0;
  const int freq = has_angle ? static_cast<int>(i % half) : 0;
  // Positions are the step's upload and inv_freq a weight: no kernel writes them.
  float sin_angle = 0.0f, cos_angle = 0.0f;
  if (has_angle)
    sincosf(static_cast<float>(positions[token]) * inv_freq[freq], &sin_angle, &cos_angle);
  detail::wait_for_prior_grids();  // `out` may be memory the kernel before still reads
  detail::allow_dependents();
  if (!has_angle) return;
  out[token * 2 * half + freq] = cos_angle;
  out[token * 2 * half + half + freq] = sin_angle;
}

}  // namespace

cudaError_t launch_rotary_angles(const std::int32_t* positions, const float* inv_freq,
                                 std::int64_t num_tokens, std::int64_t half, float* out,
                                 cudaStream_t stream) {
  if (num_tokens < 0 || half < 1 || half > 1 << 16) return cudaErrorInvalidValue;
  if (num_tokens == 0) return cudaSuccess;
  if (positions == nullptr || inv_freq == nullptr || out == nullptr) return cudaErrorInvalidValue;
  const std::int64_t blocks = (num_tokens * half + kThreads - 1) / kThreads;
  if (blocks > detail::kMaxGridX) return cudaErrorInvalidValue;
  return detail::launch_dependent(rotary_angles_kernel, static_cast<unsigned>(blocks), kThreads,
                                  0, stream, positions, inv_freq, num_tokens,
                                  static_cast<int>(half), out);
}

}  // namespace minivllm::cuda
