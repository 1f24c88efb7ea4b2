// Real CUDA errors in a step, through the fault hook (fault_plugin.cpp, cuda_faults.cu) on the
// tiny Qwen3 model, runtime.backend = "cuda" in float32 (the greedy goldens exactly). An error
// that leaves the context usable (an invalid launch) ends exactly the requests in its step and
// the engine serves on; one that loses it (an illegal address) ends every request with the CUDA
// error and stops the runtime. The second is defined last, so it runs last: no CUDA call of this
// process works after it. CUDA graphs are off: the hook is host code in forward(), which a graph
// replay does not run (a prefill graph of the faulty prompt would run without the fault).
// Skips without a CUDA device.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include <minivllm/error.hpp>

#include "fault_model.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;
using namespace testing;

class CudaStepFaults : public FaultModel {
 protected:
  void SetUp() override {
    if (!CudaOps::device_available()) GTEST_SKIP() << "no CUDA device visible to this process";
    FaultModel::SetUp();
  }

  Config cuda_config() {
    return config({"runtime.backend=\"cuda\"", "model.dtype=\"float32\"", "cache.num_blocks=0",
                   "cache.gpu_memory_utilization=0.02", "scheduler.max_num_seqs=2",
                   "runtime.cuda_graphs=false"});
  }
};

TEST_F(CudaStepFaults, AnInvalidLaunchEndsTheRequestsInItsStepAndTheEngineGoesOn) {
  LLM llm(cuda_config());
  std::vector<GenerateRequest> requests{golden(0), greedy({kCudaErrorToken, 1, 2, 3}), golden(1),
                                        golden(2)};
  const std::vector<GenerateResult> results = llm.generate(std::move(requests));
  ASSERT_EQ(results.size(), 4u);
  // The launch's own check names it (CUDA 13 calls it cudaErrorInvalidValue).
  for (int shared : {0, 1}) {
    expect_failed_with(results[shared], "CUDA error");
    expect_failed_with(results[shared], "in cudaGetLastError() at ../tests/faults/cuda_faults.cu");
  }
  expect_golden(results[2], 1);
  expect_golden(results[3], 2);
  expect_golden(llm.generate({golden(3)})[0], 3);
  expect_idle_and_whole(llm, 2);
}

TEST_F(CudaStepFaults, AnIllegalAddressEndsEveryRequestAndStopsTheRuntime) {
  LLM llm(cuda_config());
  expect_golden(llm.generate({golden(0)})[0], 0);  // a working engine first
  std::vector<GenerateRequest> requests{golden(1), greedy({kCudaIllegalAddressToken, 1, 2, 3}),
                                        golden(2), golden(3)};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<GenerateResult> results = llm.generate(std::move(requests));
  ASSERT_EQ(results.size(), 4u);
  for (const GenerateResult& r : results) {
    expect_failed_with(r, "cudaErrorIllegalAddress");
    expect_failed_with(r, "the CUDA context is lost");
  }
  EXPECT_FALSE(llm.generate({golden(0)})[0].ok());
  EXPECT_THROW(llm.stats(), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

}  // namespace
}  // namespace minivllm
