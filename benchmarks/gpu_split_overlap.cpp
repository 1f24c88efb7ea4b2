// Would a decode step run faster as two half batches on two streams, one half's GEMMs and small
// kernels overlapping the other half's HBM-bound attention? Two independent engines' worth of
// state (two CudaOps, each with its stream, weights and KV cache) replay decode graphs:
//   whole   one graph of n sequences on one stream;
//   serial  two graphs of n/2, one after the other;
//   overlap the same two graphs launched on the two streams at once.
// Wall time from the launches to the end of both streams' work, medians. Prints a table and one
// JSON line. Not run by the tests.
//   gpu_split_overlap MODEL_DIR PLUGIN_DIR [CONTEXT_LEN=1024]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/cuda_step_runner.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "model_bench_support.hpp"

namespace {

using namespace minivllm;
using Clock = std::chrono::steady_clock;

using bench::kBlockSize;
using bench::kWarmup;
constexpr int kSteps = 20;
constexpr std::int32_t kBatchSizes[] = {32, 64, 128, 192, 256};

// One engine's worth of GPU state: ops (a stream), weights, KV cache and a graph runner.
struct Engine {
  Engine(const PluginRegistry& plugins, const char* model_dir, std::int32_t kv_blocks)
      : cuda(DType::bf16), loaded(load_model(plugins, model_dir, cuda)),
        kv(allocate_kv_cache(cuda, loaded.model->kv_cache_spec(), kv_blocks, kBlockSize,
                             DType::bf16)),
        graphs(cuda, [this](const Batch& b) { return loaded.model->forward(b, kv); }, true) {}
  CudaOps cuda;
  LoadedModel loaded;
  KvCacheView kv;
  cuda::CudaStepRunner graphs;
};

template <class Run>
double measure(Engine& a, Engine& b, Run&& run) {
  std::vector<double> ms;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    MV_CUDA_CHECK(cudaStreamSynchronize(a.cuda.stream()));
    MV_CUDA_CHECK(cudaStreamSynchronize(b.cuda.stream()));
    const auto start = Clock::now();
    run();
    MV_CUDA_CHECK(cudaStreamSynchronize(a.cuda.stream()));
    MV_CUDA_CHECK(cudaStreamSynchronize(b.cuda.stream()));
    if (i >= kWarmup)
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return bench::median(ms);
}

}  // namespace

int main(int argc, char** argv) try {
  const auto args = bench::model_bench_args(argc, argv, "gpu_split_overlap");
  if (const int* exit_code = std::get_if<int>(&args)) return *exit_code;
  const auto [model_dir, plugin_dir, context] = std::get<bench::ModelBenchArgs>(args);
  const auto plugins = PluginRegistry::load({plugin_dir});
  const std::int32_t max_seqs = *std::max_element(std::begin(kBatchSizes), std::end(kBatchSizes));
  const std::int32_t kv_blocks = max_seqs * ((context + kBlockSize - 1) / kBlockSize);
  Engine a(plugins, model_dir, kv_blocks), b(plugins, model_dir, kv_blocks);
  const std::int64_t vocab = a.loaded.config.vocab_size;

  std::printf("decode graphs, bf16, context %d: one batch of n against two of n/2 (ms, medians of %d)\n",
              context, kSteps);
  std::printf("%6s | %9s %9s %9s | %8s\n", "n", "whole", "serial", "overlap", "gain");
  std::string json = "{\"context_len\": " + std::to_string(context) + ", \"steps\": [";
  for (const std::int32_t n : kBatchSizes) {
    const Batch whole = bench::uniform_batch(n, context, 1, vocab, kBlockSize);
    const Batch half = bench::uniform_batch(n / 2, context, 1, vocab, kBlockSize);
    const double t_whole = measure(a, b, [&] { a.graphs.run(whole); });
    const double t_serial = measure(a, b, [&] {
      a.graphs.run(half);
      a.graphs.run(half);
    });
    const double t_overlap = measure(a, b, [&] {
      a.graphs.run(half);
      b.graphs.run(half);
    });
    std::printf("%6d | %9.3f %9.3f %9.3f | %7.1f%%\n", n, t_whole, t_serial, t_overlap,
                100.0 * (t_whole - t_overlap) / t_whole);
    json += std::string(n == kBatchSizes[0] ? "" : ", ") + "{\"n\": " + std::to_string(n) +
            ", \"whole_ms\": " + std::to_string(t_whole) + ", \"serial_ms\": " +
            std::to_string(t_serial) + ", \"overlap_ms\": " + std::to_string(t_overlap) + "}";
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu_split_overlap: %s\n", e.what());
  return 1;
}
