// What a decode step costs in each of CudaOps' ways of running it, bf16, at several batch sizes:
//   direct  model.forward(): every op uploads the batch arrays it needs (pageable copies);
//   staged  the step runner without graphs: the batch uploaded once per step (one pinned copy);
//   graphs  the step runner with CUDA graphs: the step replayed from its bucket's graph.
// Per step: wall time from the call to the end of its GPU work (the logits stay on the device)
// and the host time the call takes to return, medians. Prints a table and one JSON line. Not run
// by the tests.
//   gpu_decode_steps MODEL_DIR PLUGIN_DIR [CONTEXT_LEN=1024]
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
constexpr std::int32_t kBatchSizes[] = {1, 8, 32, 64, 128, 256};

struct Timing {
  double step_ms = 0;     // call to the end of its GPU work
  double enqueue_ms = 0;  // call to its return
};

template <class Run>
Timing measure(CudaOps& cuda, Run&& run) {
  std::vector<double> step, enqueue;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    MV_CUDA_CHECK(cudaStreamSynchronize(cuda.stream()));
    const auto start = Clock::now();
    run();
    const auto queued = Clock::now();
    MV_CUDA_CHECK(cudaStreamSynchronize(cuda.stream()));
    const auto done = Clock::now();
    if (i < kWarmup) continue;
    step.push_back(std::chrono::duration<double, std::milli>(done - start).count());
    enqueue.push_back(std::chrono::duration<double, std::milli>(queued - start).count());
  }
  return {bench::median(step), bench::median(enqueue)};
}

}  // namespace

int main(int argc, char** argv) try {
  const auto args = bench::model_bench_args(argc, argv, "gpu_decode_steps");
  if (const int* exit_code = std::get_if<int>(&args)) return *exit_code;
  const auto [model_dir, plugin_dir, context] = std::get<bench::ModelBenchArgs>(args);
  const auto plugins = PluginRegistry::load({plugin_dir});
  CudaOps cuda(DType::bf16);
  auto loaded = load_model(plugins, model_dir, cuda);
  const std::int64_t vocab = loaded.config.vocab_size;
  const std::int32_t max_seqs = *std::max_element(std::begin(kBatchSizes), std::end(kBatchSizes));
  auto kv = allocate_kv_cache(cuda, loaded.model->kv_cache_spec(),
                              max_seqs * ((context + kBlockSize - 1) / kBlockSize), kBlockSize,
                              DType::bf16);
  Model& model = *loaded.model;
  const StepForward forward = [&](const Batch& b) { return model.forward(b, kv); };
  cuda::CudaStepRunner staged(cuda, forward, false), graphs(cuda, forward, true);

  std::printf("decode steps, bf16, context %d, block size %d (ms, medians of %d)\n", context,
              kBlockSize, kSteps);
  std::printf("%6s | %9s %9s | %9s %9s | %9s %9s\n", "batch", "direct", "queued", "staged",
              "queued", "graphs", "queued");
  std::string json = "{\"context_len\": " + std::to_string(context) + ", \"steps\": [";
  for (const std::int32_t seqs : kBatchSizes) {
    const Batch batch = bench::uniform_batch(seqs, context, 1, vocab, kBlockSize);
    const Timing d = measure(cuda, [&] { forward(batch); });
    const Timing s = measure(cuda, [&] { staged.run(batch); });
    const Timing g = measure(cuda, [&] { graphs.run(batch); });
    std::printf("%6d | %9.3f %9.3f | %9.3f %9.3f | %9.3f %9.3f\n", seqs, d.step_ms, d.enqueue_ms,
                s.step_ms, s.enqueue_ms, g.step_ms, g.enqueue_ms);
    json += std::string(seqs == kBatchSizes[0] ? "" : ", ") + "{\"batch\": " +
            std::to_string(seqs) + ", \"direct_ms\": " + std::to_string(d.step_ms) +
            ", \"staged_ms\": " + std::to_string(s.step_ms) + ", \"graphs_ms\": " +
            std::to_string(g.step_ms) + ", \"direct_queue_ms\": " + std::to_string(d.enqueue_ms) +
            ", \"staged_queue_ms\": " + std::to_string(s.enqueue_ms) +
            ", \"graphs_queue_ms\": " + std::to_string(g.enqueue_ms) + "}";
  }
  std::printf("graphs: %zu captured, arena %zu MiB\n", graphs.graphs()->num_graphs(),
              graphs.graphs()->arena_bytes() >> 20);
  std::printf("%s]}\n", json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu_decode_steps: %s\n", e.what());
  return 1;
}
