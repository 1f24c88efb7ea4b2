// The tile GEMM (kernels/cuda/tile_gemm.cuh) against cublasGemmEx (what CudaOps::linear runs,
// same arguments) at decode batch sizes on Qwen3-0.6B's projections and its lm_head: the automatic
// plan, the same unsplit, and each tile shape with automatic splits; then a decode layer's MLP and all four of its GEMMs both ways:
// cuBLAS with silu_and_mul after the gate_up GEMM, against the tile GEMMs with the activation in
// the gate_up epilogue. us per call as decode replays them (benchmarks/gemm_bench_support.hpp).
// Prints a table and one JSON line.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "benchmarks/gemm_bench_support.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/tile_gemm.cuh"

namespace minivllm {
namespace {

using bench::DeviceMemory;
using bench::RotatedWeights;
using bench::time_per_launch;
using cuda::TileGemmPlan;
using cuda::TileGemmShape;

using Shape = bench::GemmShape;
constexpr Shape kQkv{"qkv", 1024, 4096, DType::bf16}, kO{"o", 2048, 1024, DType::bf16},
    kGateUp{"gate_up", 1024, 6144, DType::bf16}, kDown{"down", 3072, 1024, DType::bf16},
    kLmHead{"lm_head", 1024, 151936, DType::f32};
constexpr Shape kShapes[] = {kQkv, kO, kGateUp, kDown, kLmHead};
constexpr std::int64_t kMs[] = {2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256};
constexpr TileGemmPlan kTiles[] = {{TileGemmShape::automatic, 0},
                                   {TileGemmShape::automatic, 1},
                                   {TileGemmShape::m64n64, 0},
                                   {TileGemmShape::m32n64, 0},
                                   {TileGemmShape::m32n32, 0}};
constexpr const char* kTileNames[] = {"auto", "unsplit", "m64n64", "m32n64", "m32n32"};
constexpr std::int64_t kMaxM = 256;

struct Result {
  std::string shape;
  std::int64_t m;
  double cublas_us;
  double tile_us[std::size(kTiles)];
};

// A decode layer's GEMMs at m: the MLP (gate_up + activation + down) and all four GEMMs.
struct LayerResult {
  std::int64_t m;
  double cublas_mlp_us, tile_mlp_us, cublas_layer_us, tile_layer_us;
};

// The tile GEMMs' split workspace, zeroed.
struct Workspace {
  DeviceMemory memory{cuda::kTileGemmWorkspaceBytes};
  cuda::TileGemmWorkspace view{memory.get(), cuda::kTileGemmWorkspaceBytes};
  Workspace() { MV_CUDA_CHECK(cudaMemset(memory.get(), 0, cuda::kTileGemmWorkspaceBytes)); }
};

std::vector<Result> run_shapes(const bench::GemmStream& gs, const Workspace& ws) {
  std::vector<Result> results;
  for (const Shape& s : kShapes) {
    const RotatedWeights rotated(s.out, s.in, kMaxM);
    DeviceMemory y(static_cast<std::size_t>(kMaxM * s.out) * 4);
    for (const std::int64_t m : kMs) {
      Result r{s.name, m, 0, {}};
      r.cublas_us = time_per_launch(gs.stream(), [&](int i) {
        bench::cublas_gemm(gs.blas(), rotated.weight(i), rotated.x.get(), y.get(), s.out_dtype, m,
                           s.out, s.in);
      });
      for (std::size_t t = 0; t < std::size(kTiles); ++t)
        r.tile_us[t] = time_per_launch(gs.stream(), [&](int i) {
          MV_CUDA_CHECK(cuda::launch_tile_gemm(rotated.x.get(), rotated.weight(i), s.out_dtype,
                                               y.get(), m, s.out, s.in, ws.view, gs.stream(),
                                               kTiles[t]));
        });
      results.push_back(r);
    }
  }
  return results;
}

std::vector<LayerResult> run_layers(const bench::GemmStream& gs, const Workspace& ws) {
  const RotatedWeights qkv(kQkv.out, kQkv.in, kMaxM), o(kO.out, kO.in, kMaxM),
      gate_up(kGateUp.out, kGateUp.in, kMaxM), down(kDown.out, kDown.in, kMaxM);
  const std::int64_t width = kGateUp.out / 2;
  DeviceMemory y(static_cast<std::size_t>(kMaxM * kGateUp.out) * 2),
      act(static_cast<std::size_t>(kMaxM * width) * 2);
  const cudaStream_t stream = gs.stream();
  std::vector<LayerResult> results;
  for (const std::int64_t m : kMs) {
    const auto cublas = [&](const RotatedWeights& w, const Shape& s, int i) {
      bench::cublas_gemm(gs.blas(), w.weight(i), w.x.get(), y.get(), s.out_dtype, m, s.out, s.in);
    };
    const auto tile = [&](const RotatedWeights& w, const Shape& s, int i) {
      MV_CUDA_CHECK(cuda::launch_tile_gemm(w.x.get(), w.weight(i), s.out_dtype, y.get(), m, s.out,
                                           s.in, ws.view, stream));
    };
    const auto cublas_mlp = [&](int i) {
      cublas(gate_up, kGateUp, i);
      MV_CUDA_CHECK(cuda::launch_silu_and_mul(DType::bf16, y.get(), act.get(), m, width, stream));
      cublas(down, kDown, i);
    };
    const auto tile_mlp = [&](int i) {
      MV_CUDA_CHECK(cuda::launch_tile_gemm_silu_and_mul(gate_up.x.get(), gate_up.weight(i),
                                                        act.get(), m, width, kGateUp.in, ws.view,
                                                        stream));
      tile(down, kDown, i);
    };
    LayerResult r{m, 0, 0, 0, 0};
    r.cublas_mlp_us = time_per_launch(stream, cublas_mlp);
    r.tile_mlp_us = time_per_launch(stream, tile_mlp);
    r.cublas_layer_us = time_per_launch(stream, [&](int i) {
      cublas(qkv, kQkv, i);
      cublas(o, kO, i);
      cublas_mlp(i);
    });
    r.tile_layer_us = time_per_launch(stream, [&](int i) {
      tile(qkv, kQkv, i);
      tile(o, kO, i);
      tile_mlp(i);
    });
    results.push_back(r);
  }
  return results;
}

void print(const std::vector<Result>& results, const std::vector<LayerResult>& layers) {
  cudaDeviceProp prop{};
  MV_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("tile GEMM vs cublasGemmEx on %s, bf16 x/W, fp32 accumulation; us per GEMM, W from "
              "HBM\n%-8s %4s %9s", prop.name, "shape", "m", "cublas");
  for (const char* name : kTileNames) std::printf(" %9s", name);
  std::printf(" %8s\n", "speedup");
  for (const Result& r : results) {
    std::printf("%-8s %4lld %9.2f", r.shape.c_str(), static_cast<long long>(r.m), r.cublas_us);
    for (const double us : r.tile_us) std::printf(" %9.2f", us);
    std::printf(" %8.2f\n", r.cublas_us / r.tile_us[0]);
  }
  std::printf("\ndecode layer (Qwen3-0.6B), us: MLP = gate_up + silu_and_mul + down (tile: the "
              "activation in the gate_up epilogue); layer = qkv + o + MLP\n%4s %11s %9s %13s %11s\n",
              "m", "cublas_mlp", "tile_mlp", "cublas_layer", "tile_layer");
  for (const LayerResult& l : layers)
    std::printf("%4lld %11.2f %9.2f %13.2f %11.2f\n", static_cast<long long>(l.m),
                l.cublas_mlp_us, l.tile_mlp_us, l.cublas_layer_us, l.tile_layer_us);
  std::printf("{\"bench\": \"gpu_tile_gemm\", \"device\": \"%s\", \"gemms\": [", prop.name);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf("%s{\"shape\": \"%s\", \"m\": %lld, \"cublas_us\": %.3f", i == 0 ? "" : ", ",
                r.shape.c_str(), static_cast<long long>(r.m), r.cublas_us);
    for (std::size_t t = 0; t < std::size(kTiles); ++t)
      std::printf(", \"%s_us\": %.3f", kTileNames[t], r.tile_us[t]);
    std::printf("}");
  }
  std::printf("], \"layers\": [");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerResult& l = layers[i];
    std::printf("%s{\"m\": %lld, \"cublas_mlp_us\": %.3f, \"tile_mlp_us\": %.3f, "
                "\"cublas_layer_us\": %.3f, \"tile_layer_us\": %.3f}",
                i == 0 ? "" : ", ", static_cast<long long>(l.m), l.cublas_mlp_us, l.tile_mlp_us,
                l.cublas_layer_us, l.tile_layer_us);
  }
  std::printf("]}\n");
}

}  // namespace
}  // namespace minivllm

int main() {
  try {
    const minivllm::bench::GemmStream gemm_stream;
    const minivllm::Workspace workspace;
    const auto results = minivllm::run_shapes(gemm_stream, workspace);
    minivllm::print(results, minivllm::run_layers(gemm_stream, workspace));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_tile_gemm_bench: %s\n", e.what());
    return 1;
  }
}
