#pragma once
// What the GEMM benchmarks share: a stream with a cuBLAS handle on it, GEMMs timed as decode replays
// them (a CUDA graph of kLaunches back-to-back calls, median of kReplays replays), weights rotated
// over >= 256 MB of copies so each call reads its W from HBM, and cuBLAS called as
// CudaOps::linear calls it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

#include "backend/cuda_check.hpp"
#include "benchmarks/gpu_bench_support.hpp"

namespace minivllm::bench {

// A projection's shape: y [m, out] = x [m, in] @ W [out, in]^T, y in out_dtype.
struct GemmShape {
  const char* name;
  std::int64_t in, out;
  DType out_dtype;
};

constexpr int kLaunches = 64;
constexpr int kReplays = 9;
constexpr std::size_t kRotationBytes = std::size_t{256} << 20;

// A non-blocking stream and a cuBLAS handle queued on it with a fixed workspace (as CudaOps has).
class GemmStream {
 public:
  GemmStream() : workspace_(kWorkspaceBytes) {
    MV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MV_CUDA_CHECK(cublasCreate(&blas_));
    MV_CUDA_CHECK(cublasSetStream(blas_, stream_));
    MV_CUDA_CHECK(cublasSetWorkspace(blas_, workspace_.get(), kWorkspaceBytes));
  }
  GemmStream(const GemmStream&) = delete;
  GemmStream& operator=(const GemmStream&) = delete;
  ~GemmStream() {
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }

 private:
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  DeviceMemory workspace_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

// Median device microseconds of one call of `launch(i)` (i: the launch's index), run kLaunches
// times in a CUDA graph.
inline double time_per_launch(cudaStream_t stream, const std::function<void(int)>& launch) {
  cudaGraph_t graph = nullptr;
  MV_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kLaunches; ++i) launch(i);
  MV_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  MV_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start = nullptr, stop = nullptr;
  MV_CUDA_CHECK(cudaEventCreate(&start));
  MV_CUDA_CHECK(cudaEventCreate(&stop));
  MV_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // warm-up
  std::vector<double> us;
  for (int r = 0; r < kReplays; ++r) {
    MV_CUDA_CHECK(cudaEventRecord(start, stream));
    MV_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    MV_CUDA_CHECK(cudaEventRecord(stop, stream));
    MV_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MV_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(1000.0 * ms / kLaunches);
  }
  MV_CUDA_CHECK(cudaEventDestroy(start));
  MV_CUDA_CHECK(cudaEventDestroy(stop));
  MV_CUDA_CHECK(cudaGraphExecDestroy(exec));
  MV_CUDA_CHECK(cudaGraphDestroy(graph));
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// y [m, out] = x [m, in] @ w [out, in]^T as CudaOps::linear calls cuBLAS.
inline void cublas_gemm(cublasHandle_t blas, const void* w, const void* x, void* y, DType y_dtype,
                 std::int64_t m, std::int64_t out, std::int64_t in) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t y_type = y_dtype == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  MV_CUDA_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out),
                             static_cast<int>(m), static_cast<int>(in), &alpha, w, CUDA_R_16BF,
                             static_cast<int>(in), x, CUDA_R_16BF, static_cast<int>(in), &beta, y,
                             y_type, static_cast<int>(out), CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT));
}

// Copies of a weight [out, in] filling >= kRotationBytes, so that each launch reads its weight
// from HBM, and an x of max_m rows; every element bf16 0x3C3C (about 0.011).
struct RotatedWeights {
  std::size_t w_bytes, copies;
  DeviceMemory w, x;

  RotatedWeights(std::int64_t out, std::int64_t in, std::int64_t max_m)
      : w_bytes(static_cast<std::size_t>(out * in) * 2),
        copies(std::max<std::size_t>(1, (kRotationBytes + w_bytes - 1) / w_bytes)),
        w(copies * w_bytes),
        x(static_cast<std::size_t>(max_m * in) * 2) {
    MV_CUDA_CHECK(cudaMemset(w.get(), 0x3C, copies * w_bytes));
    MV_CUDA_CHECK(cudaMemset(x.get(), 0x3C, static_cast<std::size_t>(max_m * in) * 2));
  }
  const char* weight(int i) const {
    return w.get() + (static_cast<std::size_t>(i) % copies) * w_bytes;
  }
};

}  // namespace minivllm::bench
