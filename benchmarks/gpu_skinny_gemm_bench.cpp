// The skinny GEMM (kernels/cuda/skinny_gemm.cuh) against cublasGemmEx (what CudaOps::linear ran
// before, same arguments) for decode-sized m on Qwen3-0.6B's projection shapes and its lm_head.
//   us    device time per GEMM: a CUDA graph of kLaunches GEMMs (as decode replays them), timed
//         between events, median of kReplays replays, divided by kLaunches;
//   GB/s  weight bytes / us. The GEMMs cycle over copies of W filling >= 256 MB, so W comes from
//         HBM, not L2, as it does in a decode step.
// bf16 x and W; y bf16, f32 for the lm_head (the logits). Prints a table, the crossover m (the
// largest m at which the skinny kernel is faster) per shape, then the gated MLP's fused kernel
// (launch_skinny_gemm_silu_and_mul on Qwen3-0.6B's gate_up, 1024 x 2 x 3072) against the pair it
// replaces, the gate_up GEMM (skinny or cuBLAS) then launch_silu_and_mul, timed the same way, and
// one JSON line.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "benchmarks/gemm_bench_support.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/skinny_gemm.cuh"

namespace minivllm {
namespace {

using bench::cublas_gemm;
using bench::DeviceMemory;
using bench::RotatedWeights;
using bench::time_per_launch;

using Shape = bench::GemmShape;
constexpr Shape kShapes[] = {
    {"k/v", 1024, 1024, DType::bf16},   {"q", 1024, 2048, DType::bf16},
    {"gate/up", 1024, 3072, DType::bf16}, {"qkv", 1024, 4096, DType::bf16},
    {"gate_up", 1024, 6144, DType::bf16}, {"o", 2048, 1024, DType::bf16},
    {"down", 3072, 1024, DType::bf16},  {"lm_head", 1024, 151936, DType::f32}};
constexpr std::int64_t kMs[] = {1, 2, 4, 8, 16, 32};
// The fused gate_up + silu_and_mul: Qwen3-0.6B's MLP at the decode m it may serve.
constexpr std::int64_t kMlpHidden = 1024, kMlpIntermediate = 3072;
constexpr std::int64_t kFusedMs[] = {1, 2, 4, 8};

struct Result {
  std::string shape;
  std::int64_t in, out, m;
  double skinny_us, cublas_us, weight_mb;
};

// us per gated MLP activation: the fused kernel, and the GEMM + silu_and_mul pairs.
struct FusedResult {
  std::int64_t m;
  double fused_us, skinny_pair_us, cublas_pair_us;
};

struct Results {
  std::vector<Result> gemms;
  std::vector<FusedResult> fused;
};

std::vector<FusedResult> run_fused(cudaStream_t stream, cublasHandle_t blas) {
  const std::int64_t max_m = kFusedMs[std::size(kFusedMs) - 1];
  const std::int64_t width = kMlpIntermediate, in = kMlpHidden;
  const RotatedWeights gate_up(2 * width, in, max_m);
  DeviceMemory y(static_cast<std::size_t>(max_m * 2 * width) * 2),
      out(static_cast<std::size_t>(max_m * width) * 2);
  std::vector<FusedResult> results;
  for (const std::int64_t m : kFusedMs) {
    FusedResult r{m, 0, 0, 0};
    r.fused_us = time_per_launch(stream, [&](int i) {
      MV_CUDA_CHECK(cuda::launch_skinny_gemm_silu_and_mul(gate_up.x.get(), gate_up.weight(i),
                                                          out.get(), m, width, in, stream));
    });
    const auto silu_and_mul = [&] {
      MV_CUDA_CHECK(cuda::launch_silu_and_mul(DType::bf16, y.get(), out.get(), m, width, stream));
    };
    r.skinny_pair_us = time_per_launch(stream, [&](int i) {
      MV_CUDA_CHECK(cuda::launch_skinny_gemm(gate_up.x.get(), gate_up.weight(i), DType::bf16,
                                             y.get(), m, 2 * width, in, stream));
      silu_and_mul();
    });
    r.cublas_pair_us = time_per_launch(stream, [&](int i) {
      cublas_gemm(blas, gate_up.weight(i), gate_up.x.get(), y.get(), DType::bf16, m, 2 * width,
                  in);
      silu_and_mul();
    });
    results.push_back(r);
  }
  return results;
}

Results run() {
  const bench::GemmStream gemm_stream;
  const cudaStream_t stream = gemm_stream.stream();
  const cublasHandle_t blas = gemm_stream.blas();
  const std::int64_t max_m = kMs[std::size(kMs) - 1];
  Results results;
  for (const Shape& s : kShapes) {
    const RotatedWeights rotated(s.out, s.in, max_m);
    DeviceMemory y(static_cast<std::size_t>(max_m * s.out) * 4);
    for (const std::int64_t m : kMs) {
      Result r{s.name, s.in, s.out, m, 0, 0, static_cast<double>(rotated.w_bytes) / 1e6};
      r.skinny_us = time_per_launch(stream, [&](int i) {
        MV_CUDA_CHECK(cuda::launch_skinny_gemm(rotated.x.get(), rotated.weight(i), s.out_dtype,
                                               y.get(), m, s.out, s.in, stream));
      });
      r.cublas_us = time_per_launch(stream, [&](int i) {
        cublas_gemm(blas, rotated.weight(i), rotated.x.get(), y.get(), s.out_dtype, m, s.out,
                    s.in);
      });
      results.gemms.push_back(r);
    }
  }
  results.fused = run_fused(stream, blas);
  return results;
}

void print(const Results& all) {
  const std::vector<Result>& results = all.gemms;
  cudaDeviceProp prop{};
  MV_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("skinny GEMM vs cublasGemmEx on %s, bf16 x/W, fp32 accumulation\n", prop.name);
  std::printf("%-8s %5s %7s %3s %8s %10s %10s %10s %10s %8s\n", "shape", "in", "out", "m",
              "W_MB", "skinny_us", "skinny_GBs", "cublas_us", "cublas_GBs", "speedup");
  for (const Result& r : results)
    std::printf("%-8s %5lld %7lld %3lld %8.2f %10.2f %10.0f %10.2f %10.0f %8.2f\n",
                r.shape.c_str(), static_cast<long long>(r.in), static_cast<long long>(r.out),
                static_cast<long long>(r.m), r.weight_mb, r.skinny_us,
                r.weight_mb * 1e6 / r.skinny_us / 1e3, r.cublas_us,
                r.weight_mb * 1e6 / r.cublas_us / 1e3, r.cublas_us / r.skinny_us);
  for (const Shape& s : kShapes) {
    std::int64_t crossover = 0;
    for (const Result& r : results)
      if (r.shape == s.name && r.skinny_us < r.cublas_us) crossover = std::max(crossover, r.m);
    std::printf("crossover %-8s: skinny faster up to m = %lld (of those measured)\n", s.name,
                static_cast<long long>(crossover));
  }
  std::printf("\ngate_up %lld x 2 x %lld with silu_and_mul, us: fused kernel vs GEMM + "
              "silu_and_mul\n",
              static_cast<long long>(kMlpHidden), static_cast<long long>(kMlpIntermediate));
  std::printf("%3s %10s %15s %15s %10s\n", "m", "fused_us", "skinny_pair_us", "cublas_pair_us",
              "saved_us");
  for (const FusedResult& f : all.fused)
    std::printf("%3lld %10.2f %15.2f %15.2f %10.2f\n", static_cast<long long>(f.m), f.fused_us,
                f.skinny_pair_us, f.cublas_pair_us,
                std::min(f.skinny_pair_us, f.cublas_pair_us) - f.fused_us);
  std::printf("{\"bench\": \"gpu_skinny_gemm\", \"device\": \"%s\", \"results\": [", prop.name);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf("%s{\"shape\": \"%s\", \"in\": %lld, \"out\": %lld, \"m\": %lld, "
                "\"weight_mb\": %.3f, \"skinny_us\": %.3f, \"cublas_us\": %.3f}",
                i == 0 ? "" : ", ", r.shape.c_str(), static_cast<long long>(r.in),
                static_cast<long long>(r.out), static_cast<long long>(r.m), r.weight_mb,
                r.skinny_us, r.cublas_us);
  }
  std::printf("], \"gate_up_silu_and_mul\": [");
  for (std::size_t i = 0; i < all.fused.size(); ++i) {
    const FusedResult& f = all.fused[i];
    std::printf("%s{\"m\": %lld, \"fused_us\": %.3f, \"skinny_pair_us\": %.3f, "
                "\"cublas_pair_us\": %.3f}",
                i == 0 ? "" : ", ", static_cast<long long>(f.m), f.fused_us, f.skinny_pair_us,
                f.cublas_pair_us);
  }
  std::printf("]}\n");
}

}  // namespace
}  // namespace minivllm

int main() {
  try {
    minivllm::print(minivllm::run());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_skinny_gemm_bench: %s\n", e.what());
    return 1;
  }
}
