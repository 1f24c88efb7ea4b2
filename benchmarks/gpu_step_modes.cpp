// What a step costs in each of CudaOps' ways of running it, bf16: decode steps at several batch
// sizes (at CONTEXT_LEN), and prompts of one sequence (the TTFT targets' 128 and 1,024 tokens,
// and the largest replayed, 512):
//   direct  model.forward(): every op uploads the batch arrays it needs (pageable copies);
//   staged  the step runner without graphs: the batch uploaded once per step (one pinned copy);
//   graphs  the step runner with CUDA graphs: the step replayed from its shape's graph (prompts
//           up to 2,048 tokens: the runner's default, above the engine's).
// Per step: wall time from the call to the end of its GPU work (the logits stay on the device)
// and the host time the call takes to return, medians. Prints a table and one JSON line. Not run
// by the tests.
//   gpu_step_modes MODEL_DIR PLUGIN_DIR [CONTEXT_LEN=1024]
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
constexpr std::int32_t kPromptLens[] = {128, 512, 1024};

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
  const auto args = bench::model_bench_args(argc, argv, "gpu_step_modes");
  if (const int* exit_code = std::get_if<int>(&args)) return *exit_code;
  const auto [model_dir, plugin_dir, context] = std::get<bench::ModelBenchArgs>(args);
  const auto plugins = PluginRegistry::load({plugin_dir});
  CudaOps cuda(DType::bf16);
  auto loaded = load_model(plugins, model_dir, cuda);
  const std::int64_t vocab = loaded.config.vocab_size;
  const std::vector<std::int32_t> batch_sizes = bench::decode_sizes_that_fit(
      "gpu_step_modes", {std::begin(kBatchSizes), std::end(kBatchSizes)}, context,
      loaded.model->kv_cache_spec());
  const std::int32_t max_seqs =
      batch_sizes.empty() ? 1 : *std::max_element(batch_sizes.begin(), batch_sizes.end());
  const std::int32_t longest = *std::max_element(std::begin(kPromptLens), std::end(kPromptLens));
  auto kv = allocate_kv_cache(cuda, loaded.model->kv_cache_spec(),
                              std::max(max_seqs * ((context + kBlockSize - 1) / kBlockSize),
                                       (longest + kBlockSize - 1) / kBlockSize),
                              kBlockSize, DType::bf16);
  Model& model = *loaded.model;
  const StepForward forward = [&](const Batch& b) { return model.forward(b, kv); };
  cuda::CudaStepRunner staged(cuda, forward, false), graphs(cuda, forward, true);

  struct Case {
    std::string name;
    Batch batch;
  };
  std::vector<Case> cases;
  for (const std::int32_t seqs : batch_sizes)
    cases.push_back({"decode " + std::to_string(seqs),
                     bench::uniform_batch(seqs, context, 1, vocab, kBlockSize)});
  for (const std::int32_t tokens : kPromptLens)
    cases.push_back({"prompt " + std::to_string(tokens),
                     bench::uniform_batch(1, tokens, tokens, vocab, kBlockSize)});

  std::printf("steps, bf16, decode context %d, block size %d (ms, medians of %d)\n", context,
              kBlockSize, kSteps);
  std::printf("%12s | %9s %9s | %9s %9s | %9s %9s\n", "step", "direct", "queued", "staged",
              "queued", "graphs", "queued");
  std::string json = "{\"context_len\": " + std::to_string(context) + ", \"steps\": [";
  for (const Case& c : cases) {
    const Timing d = measure(cuda, [&] { forward(c.batch); });
    const Timing s = measure(cuda, [&] { staged.run(c.batch); });
    const Timing g = measure(cuda, [&] { graphs.run(c.batch); });
    std::printf("%12s | %9.3f %9.3f | %9.3f %9.3f | %9.3f %9.3f\n", c.name.c_str(), d.step_ms,
                d.enqueue_ms, s.step_ms, s.enqueue_ms, g.step_ms, g.enqueue_ms);
    json += std::string(&c == &cases.front() ? "" : ", ") + "{\"step\": \"" + c.name +
            "\", \"direct_ms\": " + std::to_string(d.step_ms) +
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
  std::fprintf(stderr, "gpu_step_modes: %s\n", e.what());
  return 1;
}
