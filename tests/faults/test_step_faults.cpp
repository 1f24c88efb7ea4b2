// Faults in a step, through the fault hook (fault_plugin.cpp) on the tiny Qwen3 model and the
// LLM facade: a step that throws ends exactly the requests in it with an error; a worker that
// stops answering fails its step within runtime.step_timeout_s; either way the engine serves
// the rest and new requests, and no KV block is lost. A step that loses the device ends every
// request with why and stops the runtime, so that nothing waits on it.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "fault_model.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;
using namespace testing;

using StepFaults = FaultModel;

TEST_F(StepFaults, AStepThatThrowsEndsTheRequestsInItAndTheEngineGoesOn) {
  // Two run at once: `shared` needs more steps than run ahead of the faulty prompt's prefill, so
  // it shares that step; the two behind them wait and run after it.
  LLM llm(config({"scheduler.max_num_seqs=2"}));
  std::vector<GenerateRequest> requests{golden(0), greedy({kThrowToken, 1, 2, 3}), golden(1),
                                        golden(2)};
  const std::vector<GenerateResult> results = llm.generate(std::move(requests));
  ASSERT_EQ(results.size(), 4u);
  for (int shared : {0, 1})
    expect_failed_with(results[shared], "injected fault: a step with token 151000 threw");
  expect_golden(results[2], 1);
  expect_golden(results[3], 2);
  expect_golden(llm.generate({golden(3)})[0], 3);  // and new ones
  expect_idle_and_whole(llm, 2);
}

TEST_F(StepFaults, AWorkerThatStopsAnsweringFailsItsStepWithinTheTimeout) {
  LLM llm(config({"runtime.step_timeout_s=1"}));
  const auto start = std::chrono::steady_clock::now();
  const GenerateResult hung = llm.generate({greedy({kHangToken, 5, 6})})[0];
  const auto waited = std::chrono::steady_clock::now() - start;
  expect_failed_with(hung, "did not answer step");
  expect_failed_with(hung, "runtime.step_timeout_s");
  // Detected by the timeout, well before the worker came back.
  EXPECT_LT(waited, std::chrono::seconds(kHangSeconds) - 1s);
  // Once it answers again (its late answers dropped), the engine serves new requests.
  std::this_thread::sleep_until(start + std::chrono::seconds(kHangSeconds) + 500ms);
  expect_golden(llm.generate({golden(0)})[0], 0);
  expect_idle_and_whole(llm, 1);
}

TEST_F(StepFaults, AStepThatLosesTheDeviceEndsEveryRequestAndStopsTheRuntime) {
  LLM llm(config({"scheduler.max_num_seqs=2"}));
  // The lost step's two requests, and the two waiting behind them that it could never run.
  std::vector<GenerateRequest> requests{golden(0), greedy({kDeviceLostToken, 1, 2, 3}), golden(1),
                                        golden(2)};
  const std::vector<GenerateResult> results = llm.generate(std::move(requests));
  ASSERT_EQ(results.size(), 4u);
  for (const GenerateResult& r : results)
    expect_failed_with(r, "injected fault: a step with token 151002 lost the device");
  // A stopped runtime answers at once, and says so.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(llm.generate({golden(3)})[0].ok());
  EXPECT_THROW(llm.stats(), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

}  // namespace
}  // namespace minivllm
