// The ceilings every GPU figure is read against, measured on the machine at hand: cuBLAS bf16
// GEMM TFLOP/s (fp32 accumulation, random data), device-to-device copy GB/s (bytes read + bytes
// written) and HBM read GB/s (a read-only stream, the best of a few launch shapes: what a
// bandwidth-bound kernel that only reads, like decode attention, can reach at most). Prints a
// table and one JSON line.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "kernels/bf16.hpp"

namespace {

using minivllm::bench::check;
using minivllm::bench::DeviceMemory;
using minivllm::bench::median_ms;

void fill_random_bf16(const DeviceMemory& d, std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::uint16_t> host(n);
  for (auto& h : host) h = minivllm::f32_to_bf16(dist(rng));
  check(cudaMemcpy(d.get(), host.data(), n * sizeof(std::uint16_t), cudaMemcpyHostToDevice),
        "upload");
}

// Reads `words` 16-byte words, `kUnroll` independent loads in flight per thread, streaming past
// L1. The xor of everything read is stored only if it equals a value it cannot take from the
// 0x5A fill, so the loads stay and nothing is written.
constexpr int kUnroll = 8;

__global__ void read_stream(const uint4* __restrict__ src, std::size_t words, unsigned* sink) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  unsigned acc = 0;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < words; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < words; i += stride) {
    const uint4 v = __ldcs(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

struct Timed {
  float ms = 0;
  double rate = 0;  // TFLOP/s or GB/s
};

// C[m,n] = A[m,k] B[k,n] at m = n = k = dim, bf16 in and out, fp32 accumulation.
Timed gemm_ceiling(int dim) {
  std::mt19937 rng(std::random_device{}());
  const std::size_t elems = static_cast<std::size_t>(dim) * dim;
  DeviceMemory a(elems * sizeof(std::uint16_t)), b(elems * sizeof(std::uint16_t)),
      c(elems * sizeof(std::uint16_t));
  fill_random_bf16(a, elems, rng);
  fill_random_bf16(b, elems, rng);
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  Timed t;
  t.ms = median_ms(5, 20, [&] {
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, a.get(),
                       CUDA_R_16BF, dim, b.get(), CUDA_R_16BF, dim, &beta, c.get(), CUDA_R_16BF,
                       dim, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  });
  t.rate = 2.0 * dim * dim * static_cast<double>(dim) / (t.ms * 1e-3) / 1e12;
  cublasDestroy(handle);
  return t;
}

// Device-to-device copy of `bytes` from src to dst, counting bytes read + written.
Timed copy_ceiling(const DeviceMemory& src, const DeviceMemory& dst, std::size_t bytes) {
  Timed t;
  t.ms = median_ms(3, 20, [&] {
    check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice),
          "cudaMemcpyAsync");
  });
  t.rate = 2.0 * static_cast<double>(bytes) / (t.ms * 1e-3) / 1e9;
  return t;
}

// The fastest read of `bytes` of src (filled with 0x5A) over blocks of 256-1024 threads, 1-8
// blocks per SM resident; each launch's rate is printed. `blocks` and `threads` get the best.
Timed read_ceiling(const cudaDeviceProp& prop, const DeviceMemory& src, std::size_t bytes,
                   unsigned* sink, int& blocks, int& threads) {
  const std::size_t words = bytes / sizeof(uint4);
  Timed best;
  for (const int block_threads : {256, 512, 1024}) {
    for (const int per_sm : {1, 2, 4, 8}) {
      if (block_threads * per_sm > prop.maxThreadsPerMultiProcessor) continue;
      const int grid = prop.multiProcessorCount * per_sm;
      const float ms = median_ms(3, 20, [&] {
        read_stream<<<grid, block_threads>>>(reinterpret_cast<const uint4*>(src.get()), words,
                                             sink);
        check(cudaGetLastError(), "read_stream");
      });
      const double gbs = static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
      std::printf("read %d blocks x %d threads: %.0f GB/s\n", grid, block_threads, gbs);
      if (best.ms == 0 || ms < best.ms) best = {ms, gbs}, blocks = grid, threads = block_threads;
    }
  }
  return best;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int dim = 8192;
  const Timed gemm = gemm_ceiling(dim);

  // 2 GiB buffers, far past the L2.
  const std::size_t bytes = std::size_t{2} << 30;
  DeviceMemory src(bytes), dst(bytes);
  check(cudaMemset(src.get(), 0x5A, bytes), "cudaMemset");
  const Timed copy = copy_ceiling(src, dst, bytes);
  int read_blocks = 0, read_threads = 0;
  const Timed read = read_ceiling(prop, src, bytes, reinterpret_cast<unsigned*>(dst.get()),
                                  read_blocks, read_threads);

  std::printf("| device | bf16 GEMM %d^3 | D2D copy (read+write) | HBM read (best launch) |\n"
              "|---|---|---|---|\n", dim);
  std::printf("| %s | %.1f TFLOP/s (%.3f ms) | %.0f GB/s (%.3f ms for 2 GiB) | %.0f GB/s (%.3f ms; "
              "%d x %d threads) |\n",
              prop.name, gemm.rate, gemm.ms, copy.rate, copy.ms, read.rate, read.ms, read_blocks,
              read_threads);
  std::printf("{\"device\":\"%s\",\"gemm_bf16_8192_tflops\":%.1f,\"gemm_ms\":%.4f,"
              "\"copy_gbs\":%.1f,\"copy_ms\":%.4f,\"read_gbs\":%.1f,\"read_ms\":%.4f}\n",
              prop.name, gemm.rate, gemm.ms, copy.rate, copy.ms, read.rate, read.ms);
  return 0;
}
