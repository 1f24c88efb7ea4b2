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
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"

namespace {

using namespace minivllm;
using Clock = std::chrono::steady_clock;

constexpr std::int32_t kBlockSize = 256;
constexpr int kWarmup = 3;
constexpr int kSteps = 20;
constexpr std::int32_t kBatchSizes[] = {32, 64, 128, 192, 256};

// `seqs` sequences of `context` tokens, the last one new, on disjoint blocks.
Batch decode_batch(std::int32_t seqs, std::int32_t context, std::int64_t vocab) {
  BatchBuilder builder(kBlockSize);
  const std::int32_t blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
  std::vector<std::int32_t> table(blocks_per_seq);
  for (std::int32_t s = 0; s < seqs; ++s) {
    for (std::int32_t b = 0; b < blocks_per_seq; ++b) table[b] = s * blocks_per_seq + b;
    const std::vector<std::int32_t> token{static_cast<std::int32_t>((s * 7919) % vocab)};
    builder.add(token, context - 1, table);
  }
  return builder.build();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpu_split_overlap MODEL_DIR PLUGIN_DIR [CONTEXT_LEN]\n");
    return 2;
  }
  if (!CudaOps::device_available()) {
    std::printf("gpu_split_overlap: skipped, no CUDA device\n");
    return 0;
  }
  const std::int32_t context = argc > 3 ? std::stoi(argv[3]) : 1024;
  const auto plugins = PluginRegistry::load({argv[2]});
  const std::int32_t max_seqs = *std::max_element(std::begin(kBatchSizes), std::end(kBatchSizes));
  const std::int32_t kv_blocks = max_seqs * ((context + kBlockSize - 1) / kBlockSize);
  Engine a(plugins, argv[1], kv_blocks), b(plugins, argv[1], kv_blocks);
  const std::int64_t vocab = a.loaded.config.vocab_size;

  std::printf("decode graphs, bf16, context %d: one batch of n against two of n/2 (ms, medians of %d)\n",
              context, kSteps);
  std::printf("%6s | %9s %9s %9s | %8s\n", "n", "whole", "serial", "overlap", "gain");
  std::string json = "{\"context_len\": " + std::to_string(context) + ", \"steps\": [";
  for (const std::int32_t n : kBatchSizes) {
    const Batch whole = decode_batch(n, context, vocab), half = decode_batch(n / 2, context, vocab);
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
