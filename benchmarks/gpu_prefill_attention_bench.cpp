// Prefill attention (kernels/cuda/paged_attention.cuh, launch_prefill_attention) on the GPU at
// hand: causal TFLOP/s for whole prompts (query = context), single sequences of 512 to 16k tokens
// and one ragged batch, bf16, Qwen3-0.6B's heads (16 query heads, 8 KV heads, head_dim 128),
// block size 256 (the H200 config's). Against, in the same run: a naive cuBLAS attention (per
// sequence: Q K^T for every head with cublasGemmStridedBatchedEx, a causal mask + softmax kernel,
// P V likewise; it computes the full square, counted with the same causal FLOPs) and the cuBLAS
// bf16 GEMM 8192^3 ceiling. FLOPs: 2 * 2 * heads * head_dim * sum(L^2) / 2. Also the largest
// difference between the two outputs. Then the flash kernel again over an fp8_e4m3 cache of the
// same shape (random codes, e8m0 scales of 1): its time alone. CUDA events, warm-up, median. Prints a
// table and one JSON line.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "benchmarks/causal_softmax.cuh"
#include "benchmarks/gpu_bench_support.hpp"
#include "kernels/bf16.hpp"
#include "kernels/cuda/paged_attention.cuh"

namespace {

namespace cuda = minivllm::cuda;
using minivllm::bench::check;
using minivllm::bench::median_ms;

constexpr std::int64_t kHeads = 16, kKvHeads = 8, kHeadDim = 128, kBlockSize = 256;
constexpr std::int64_t kGroup = kHeads / kKvHeads;
constexpr int kWarmup = 3, kReps = 15;

// A device array of n bf16 values uniform in [-1, 1).
struct DeviceBf16 {
  std::uint16_t* ptr = nullptr;
  DeviceBf16(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<std::uint16_t> host(n);
    for (auto& h : host) h = minivllm::f32_to_bf16(dist(rng));
    check(cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(std::uint16_t)), "cudaMalloc");
    check(cudaMemcpy(ptr, host.data(), n * sizeof(std::uint16_t), cudaMemcpyHostToDevice),
          "upload");
  }
  explicit DeviceBf16(std::size_t n) {
    check(cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(std::uint16_t)), "cudaMalloc");
  }
  DeviceBf16(const DeviceBf16&) = delete;
  DeviceBf16& operator=(const DeviceBf16&) = delete;
  ~DeviceBf16() { cudaFree(ptr); }
};

template <class T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&d), v.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return d;
}

std::vector<float> download_bf16(const std::uint16_t* d, std::size_t n) {
  std::vector<std::uint16_t> bits(n);
  check(cudaMemcpy(bits.data(), d, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost),
        "download");
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = minivllm::bf16_to_f32(bits[i]);
  return out;
}

struct Result {
  std::string name;
  std::int64_t tokens;
  double flash_ms, flash_tflops, naive_ms, naive_tflops, fp8_flash_ms;
  double max_abs_diff;           // over the outputs where both are finite
  std::int64_t flash_non_finite;  // outputs of the kernel that are NaN or infinite
};

// One batch of prompts: each sequence's blocks lie in order in the cache, so the naive baseline
// can read its keys and values as one [L, kv_heads * head_dim] matrix.
Result run_case(const std::string& name, const std::vector<std::int64_t>& lens,
                cublasHandle_t handle, std::mt19937& rng) {
  std::vector<std::int32_t> query_start{0}, context_lens, block_tables, first_block;
  std::int64_t blocks = 0, max_len = 0, max_blocks = 0;
  double sum_sq = 0;
  for (std::int64_t len : lens) {
    query_start.push_back(static_cast<std::int32_t>(query_start.back() + len));
    context_lens.push_back(static_cast<std::int32_t>(len));
    first_block.push_back(static_cast<std::int32_t>(blocks));
    blocks += (len + kBlockSize - 1) / kBlockSize;
    max_len = std::max(max_len, len);
    max_blocks = std::max(max_blocks, (len + kBlockSize - 1) / kBlockSize);
    sum_sq += static_cast<double>(len) * static_cast<double>(len);
  }
  for (std::size_t s = 0; s < lens.size(); ++s)
    for (std::int64_t b = 0; b < max_blocks; ++b)
      block_tables.push_back(
          b * kBlockSize < lens[s] ? static_cast<std::int32_t>(first_block[s] + b) : -1);
  const std::int64_t tokens = query_start.back();
  const std::size_t q_elems = static_cast<std::size_t>(tokens * kHeads * kHeadDim);
  const std::size_t cache_elems =
      static_cast<std::size_t>(blocks * kBlockSize * kKvHeads * kHeadDim);

  DeviceBf16 q(q_elems, rng), key_cache(cache_elems, rng), value_cache(cache_elems, rng);
  DeviceBf16 out(q_elems), naive_out(q_elems);
  std::int32_t* d_tables = upload(block_tables);
  std::int32_t* d_query_start = upload(query_start);
  std::int32_t* d_context_lens = upload(context_lens);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));

  cuda::PagedAttentionParams p;
  p.dtype = minivllm::DType::bf16;
  p.q = q.ptr;
  p.key_cache = key_cache.ptr;
  p.value_cache = value_cache.ptr;
  p.block_tables = d_tables;
  p.query_start = d_query_start;
  p.context_lens = d_context_lens;
  p.num_seqs = static_cast<std::int64_t>(lens.size());
  p.max_query_len = max_len;
  p.max_blocks_per_seq = max_blocks;
  p.num_blocks = blocks;
  p.block_size = kBlockSize;
  p.num_heads = kHeads;
  p.num_kv_heads = kKvHeads;
  p.head_dim = kHeadDim;
  p.scale = scale;
  p.out = out.ptr;
  const float flash_ms = median_ms(kWarmup, kReps, [&] {
    check(cuda::launch_prefill_attention(p, nullptr), "launch_prefill_attention");
  });

  // The same over an fp8 cache: random codes (no NaN code), every scale 1.
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> codes(cache_elems);
  for (auto& c : codes) {
    const int b = byte(rng);
    c = static_cast<std::uint8_t>((b & 0x7F) == 0x7F ? b ^ 1 : b);
  }
  std::uint8_t* d_key_codes = upload(codes);
  std::uint8_t* d_value_codes = upload(codes);
  std::uint8_t* d_scales = upload(std::vector<std::uint8_t>(  // e8m0: 1
      static_cast<std::size_t>(blocks * kBlockSize * kKvHeads), 127));
  DeviceBf16 fp8_out(q_elems);  // its own: `out` is checked against the naive path below
  cuda::PagedAttentionParams p8 = p;
  p8.kv_dtype = minivllm::DType::fp8_e4m3;
  p8.out = fp8_out.ptr;
  p8.key_cache = d_key_codes;
  p8.value_cache = d_value_codes;
  p8.key_scales = p8.value_scales = d_scales;
  const float fp8_flash_ms = median_ms(kWarmup, kReps, [&] {
    check(cuda::launch_prefill_attention(p8, nullptr), "launch_prefill_attention (fp8)");
  });
  cudaFree(d_key_codes);
  cudaFree(d_value_codes);
  cudaFree(d_scales);

  // Naive: scores of every head of one sequence at a time, [heads, L, L] bf16.
  DeviceBf16 scores(static_cast<std::size_t>(kHeads * max_len * max_len));
  const float one = 1.0f, zero = 0.0f;
  const auto naive = [&] {
    for (std::size_t s = 0; s < lens.size(); ++s) {
      const int L = static_cast<int>(lens[s]);
      const std::uint16_t* q_seq = q.ptr + std::int64_t{query_start[s]} * kHeads * kHeadDim;
      const std::int64_t kv_offset =
          std::int64_t{first_block[s]} * kBlockSize * kKvHeads * kHeadDim;
      std::uint16_t* o_seq = naive_out.ptr + std::int64_t{query_start[s]} * kHeads * kHeadDim;
      const long long square = static_cast<long long>(L) * L;
      // Head h = kv * kGroup + j: one strided batch over the KV heads per j.
      for (int j = 0; j < kGroup; ++j)  // S^T (keys x queries, column-major) = K Q^T
        check(cublasGemmStridedBatchedEx(
                  handle, CUBLAS_OP_T, CUBLAS_OP_N, L, L, kHeadDim, &one,
                  key_cache.ptr + kv_offset, CUDA_R_16BF, kKvHeads * kHeadDim, kHeadDim,
                  q_seq + j * kHeadDim, CUDA_R_16BF, kHeads * kHeadDim, kGroup * kHeadDim, &zero,
                  scores.ptr + j * square, CUDA_R_16BF, L, kGroup * square, kKvHeads,
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "QK^T GEMM");
      check(minivllm::bench::launch_causal_softmax(scores.ptr, kHeads * L, L, scale, nullptr),
            "causal softmax");
      for (int j = 0; j < kGroup; ++j)  // O^T (dims x queries) = V^T P^T
        check(cublasGemmStridedBatchedEx(
                  handle, CUBLAS_OP_N, CUBLAS_OP_N, kHeadDim, L, L, &one,
                  value_cache.ptr + kv_offset, CUDA_R_16BF, kKvHeads * kHeadDim, kHeadDim,
                  scores.ptr + j * square, CUDA_R_16BF, L, kGroup * square, &zero,
                  o_seq + j * kHeadDim, CUDA_R_16BF, kHeads * kHeadDim, kGroup * kHeadDim,
                  kKvHeads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "PV GEMM");
    }
  };
  const float naive_ms = median_ms(kWarmup, kReps, naive);

  const auto got = download_bf16(out.ptr, q_elems);
  const auto want = download_bf16(naive_out.ptr, q_elems);
  double max_diff = 0;
  std::int64_t non_finite = 0;
  for (std::size_t i = 0; i < q_elems; ++i) {
    if (!std::isfinite(got[i])) ++non_finite;
    else if (std::isfinite(want[i]))
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
  }

  cudaFree(d_tables);
  cudaFree(d_query_start);
  cudaFree(d_context_lens);
  const double flops = 2.0 * 2.0 * kHeads * kHeadDim * sum_sq / 2.0;
  return {name, tokens, flash_ms, flops / (flash_ms * 1e-3) / 1e12, naive_ms,
          flops / (naive_ms * 1e-3) / 1e12, fp8_flash_ms, max_diff, non_finite};
}

double gemm_ceiling_tflops(cublasHandle_t handle, std::mt19937& rng) {
  const int dim = 8192;
  const std::size_t elems = std::size_t{dim} * dim;
  DeviceBf16 a(elems, rng), b(elems, rng), c(elems);
  const float one = 1.0f, zero = 0.0f;
  const float ms = median_ms(kWarmup, kReps, [&] {
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, a.ptr, CUDA_R_16BF,
                       dim, b.ptr, CUDA_R_16BF, dim, &zero, c.ptr, CUDA_R_16BF, dim,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  });
  return 2.0 * dim * dim * static_cast<double>(dim) / (ms * 1e-3) / 1e12;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::mt19937 rng(std::random_device{}());
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");

  const double ceiling = gemm_ceiling_tflops(handle, rng);
  std::vector<Result> results;
  for (std::int64_t len : {512, 1024, 2048, 4096, 8192, 16384})
    results.push_back(run_case(std::to_string(len), {len}, handle, rng));
  results.push_back(run_case("ragged", {3000, 2047, 1537, 1024, 700, 333, 100, 17}, handle, rng));
  check(cublasDestroy(handle), "cublasDestroy");

  std::printf("%s, %d SMs; cuBLAS bf16 GEMM 8192^3: %.1f TFLOP/s\n", prop.name,
              prop.multiProcessorCount, ceiling);
  std::printf("heads %lld/%lld, head_dim %lld, block_size %lld, causal prompts\n\n",
              static_cast<long long>(kHeads), static_cast<long long>(kKvHeads),
              static_cast<long long>(kHeadDim), static_cast<long long>(kBlockSize));
  std::printf("| case | tokens | flash ms | flash TFLOP/s | naive ms | naive TFLOP/s | max |diff| "
              "| non-finite | flash ms, fp8 cache |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const Result& r : results)
    std::printf("| %s | %lld | %.3f | %.1f | %.3f | %.1f | %.4f | %lld | %.3f |\n", r.name.c_str(),
                static_cast<long long>(r.tokens), r.flash_ms, r.flash_tflops, r.naive_ms,
                r.naive_tflops, r.max_abs_diff, static_cast<long long>(r.flash_non_finite),
                r.fp8_flash_ms);
  std::printf("{\"device\":\"%s\",\"gemm_bf16_8192_tflops\":%.1f,\"heads\":%lld,\"kv_heads\":%lld,"
              "\"head_dim\":%lld,\"block_size\":%lld,\"cases\":[",
              prop.name, ceiling, static_cast<long long>(kHeads),
              static_cast<long long>(kKvHeads), static_cast<long long>(kHeadDim),
              static_cast<long long>(kBlockSize));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf("%s{\"case\":\"%s\",\"tokens\":%lld,\"flash_ms\":%.4f,\"flash_tflops\":%.1f,"
                "\"naive_ms\":%.4f,\"naive_tflops\":%.1f,\"max_abs_diff\":%.5f,"
                "\"non_finite\":%lld,\"fp8_flash_ms\":%.4f}",
                i == 0 ? "" : ",", r.name.c_str(), static_cast<long long>(r.tokens), r.flash_ms,
                r.flash_tflops, r.naive_ms, r.naive_tflops, r.max_abs_diff,
                static_cast<long long>(r.flash_non_finite), r.fp8_flash_ms);
  }
  std::printf("]}\n");
  // The flash and naive outputs differ by bf16 rounding (~0.004 at these inputs); more means a
  // wrong kernel or a wrong comparison, and the times above would not be of a correct kernel.
  constexpr double kMaxDiff = 0.02;
  for (const Result& r : results)
    if (r.max_abs_diff > kMaxDiff || r.flash_non_finite > 0) {
      std::fprintf(stderr, "case %s: flash against naive max |diff| %.4f, %lld non-finite\n",
                   r.name.c_str(), r.max_abs_diff, static_cast<long long>(r.flash_non_finite));
      return 1;
    }
  return 0;
}
