// The engine's acceptance on a GPU through the facade: tiny-qwen3 with runtime.backend = "cuda",
// the KV cache sized from device memory (cache.num_blocks = 0). f32: the greedy goldens exactly,
// alone and 64 together. bf16: the fp32 goldens up to the first step whose margin is below 1.0.
// Skips without a CUDA device.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"
#include "golden_run.hpp"
#include "backend/cuda_ops.hpp"

namespace minivllm {
namespace {

constexpr double kBf16MarginTolerance = 1.0;

class CudaEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaOps::device_available()) GTEST_SKIP() << "no CUDA device visible to this process";
  }

  // Runs goldens[picks[i]] at once on tiny-qwen3 on the GPU in `dtype`.
  static void run(const std::string& dtype, const std::vector<testing::Golden>& goldens,
                  const std::vector<std::size_t>& picks) {
    // A small utilization: the tiny model needs little and the cache is zeroed through the host.
    LLM llm(testing::tiny_config("tiny-qwen3",
                                 {"runtime.backend=\"cuda\"", "model.dtype=\"" + dtype + "\"",
                                  "model.max_model_len=1024", "scheduler.max_num_seqs=256",
                                  "cache.num_blocks=0", "cache.gpu_memory_utilization=0.02"}));
    const EngineStats stats = testing::expect_goldens(llm, goldens, picks, dtype);
    EXPECT_GT(stats.num_blocks, 0u);
  }
};

TEST_F(CudaEngine, Float32EqualsTheGreedyGoldens) {
  const std::vector<testing::Golden> goldens = testing::load_goldens("tiny-qwen3");
  for (std::size_t i = 0; i < goldens.size(); ++i) run("float32", goldens, {i});
  run("float32", goldens, testing::mixed_picks(64, goldens.size()));
}

TEST_F(CudaEngine, Bfloat16EqualsTheGoldensUpToTheFirstNearTie) {
  std::vector<testing::Golden> goldens;
  for (const testing::GreedyGolden& g : testing::load_greedy_goldens("tiny-qwen3"))
    goldens.push_back({g.prompt, g.reliable_tokens(kBf16MarginTolerance)});
  run("bfloat16", goldens, testing::mixed_picks(64, goldens.size()));
}

}  // namespace
}  // namespace minivllm
