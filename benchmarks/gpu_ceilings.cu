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
using minivllm::bench::median_ms;

void* device_random_bf16(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::uint16_t> host(n);
  for (auto& h : host) h = minivllm::f32_to_bf16(dist(rng));
  void* d = nullptr;
  check(cudaMalloc(&d, n * sizeof(std::uint16_t)), "cudaMalloc");
  check(cudaMemcpy(d, host.data(), n * sizeof(std::uint16_t), cudaMemcpyHostToDevice), "upload");
  return d;
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

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::mt19937 rng(std::random_device{}());

  // GEMM: C[m,n] = A[m,k] B[k,n], bf16 in and out, fp32 accumulation.
  const int dim = 8192;
  const std::size_t elems = std::size_t{dim} * dim;
  void* a = device_random_bf16(elems, rng);
  void* b = device_random_bf16(elems, rng);
  void* c = nullptr;
  check(cudaMalloc(&c, elems * sizeof(std::uint16_t)), "cudaMalloc");
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  float gemm_ms = median_ms(5, 20, [&] {
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, a, CUDA_R_16BF,
                       dim, b, CUDA_R_16BF, dim, &beta, c, CUDA_R_16BF, dim, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  });
  double tflops = 2.0 * dim * dim * static_cast<double>(dim) / (gemm_ms * 1e-3) / 1e12;
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);

  // Copy: 2 GiB device to device, far past the L2.
  const std::size_t bytes = std::size_t{2} << 30;
  void* src = nullptr;
  void* dst = nullptr;
  check(cudaMalloc(&src, bytes), "cudaMalloc");
  check(cudaMalloc(&dst, bytes), "cudaMalloc");
  check(cudaMemset(src, 0x5A, bytes), "cudaMemset");
  float copy_ms = median_ms(3, 20, [&] {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
  });
  double copy_gbs = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e-3) / 1e9;

  // Read: the same 2 GiB source, blocks of 256-1024 threads, 1-8 blocks per SM resident.
  unsigned* sink = static_cast<unsigned*>(dst);
  const std::size_t words = bytes / sizeof(uint4);
  float read_ms = 0;
  int read_threads = 0, read_blocks = 0;
  for (const int threads : {256, 512, 1024}) {
    for (const int per_sm : {1, 2, 4, 8}) {
      if (threads * per_sm > prop.maxThreadsPerMultiProcessor) continue;
      const int blocks = prop.multiProcessorCount * per_sm;
      const float ms = median_ms(3, 20, [&] {
        read_stream<<<blocks, threads>>>(static_cast<const uint4*>(src), words, sink);
        check(cudaGetLastError(), "read_stream");
      });
      std::printf("read %d blocks x %d threads: %.0f GB/s\n", blocks, threads,
                  static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
      if (read_threads == 0 || ms < read_ms) read_ms = ms, read_threads = threads, read_blocks = blocks;
    }
  }
  double read_gbs = static_cast<double>(bytes) / (read_ms * 1e-3) / 1e9;
  cudaFree(src);
  cudaFree(dst);

  std::printf("| device | bf16 GEMM %d^3 | D2D copy (read+write) | HBM read (best launch) |\n"
              "|---|---|---|---|\n", dim);
  std::printf("| %s | %.1f TFLOP/s (%.3f ms) | %.0f GB/s (%.3f ms for 2 GiB) | %.0f GB/s (%.3f ms; "
              "%d x %d threads) |\n",
              prop.name, tflops, gemm_ms, copy_gbs, copy_ms, read_gbs, read_ms, read_blocks,
              read_threads);
  std::printf("{\"device\":\"%s\",\"gemm_bf16_8192_tflops\":%.1f,\"gemm_ms\":%.4f,"
              "\"copy_gbs\":%.1f,\"copy_ms\":%.4f,\"read_gbs\":%.1f,\"read_ms\":%.4f}\n",
              prop.name, tflops, gemm_ms, copy_gbs, copy_ms, read_gbs, read_ms);
  return 0;
}
