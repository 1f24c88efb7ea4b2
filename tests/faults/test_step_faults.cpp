// Faults in a step, through the fault hook (fault_plugin.cpp) on the tiny Qwen3 model and the
// LLM facade: a step that throws ends exactly the requests in it with an error; a worker that
// stops answering fails its step within runtime.step_timeout_s; either way the engine serves
// the rest and new requests, and no KV block is lost.
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"
#include "temp_dir.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::int32_t kThrowToken = 151000;
constexpr std::int32_t kHangToken = 151001;
constexpr int kHangSeconds = 4;
constexpr int kNewTokens = 8;

class StepFaults : public ::testing::Test {
 protected:
  // tiny-qwen3's folder with the fault hook's family and cues in its config.json.
  void SetUp() override {
    const fs::path source = testing::user_data_dir() / "models" / "tiny-qwen3";
    for (const auto& entry : fs::directory_iterator(source))
      if (entry.path().filename() != "config.json")
        fs::create_symlink(entry.path(), model_ / entry.path().filename());
    json config = json::parse(std::ifstream(source / "config.json"));
    config["architectures"] = {"FaultInjectingQwen3ForCausalLM"};
    config["model_type"] = "qwen3_fault_injecting";
    config["fault_throw_token_id"] = kThrowToken;
    config["fault_hang_token_id"] = kHangToken;
    config["fault_hang_seconds"] = kHangSeconds;
    std::ofstream(model_ / "config.json") << config.dump(2);
    goldens_ = testing::load_goldens("tiny-qwen3");
  }

  Config config(std::vector<std::string> overrides) {
    overrides.insert(overrides.begin(),
                     {"model.path=" + json(model_.path().string()).dump(),
                      "runtime.plugin_dirs=[" + json(testing::env_path("MINIVLLM_FAULT_PLUGIN_DIR").string()).dump() + "]",
                      "model.max_model_len=1024"});
    return load_config(testing::tiny_config_file("tiny-qwen3"), overrides);
  }

  static GenerateRequest greedy(std::vector<std::int32_t> prompt) {
    GenerateRequest r;
    r.prompt_token_ids = std::move(prompt);
    r.params.temperature = 0;
    r.params.max_tokens = kNewTokens;
    r.params.ignore_eos = true;
    return r;
  }
  GenerateRequest golden(std::size_t i) { return greedy(goldens_[i].prompt); }

  void expect_golden(const GenerateResult& r, std::size_t i) {
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.output.outputs.size(), 1u);
    const std::vector<std::int32_t>& want = goldens_[i].expected;
    EXPECT_EQ(testing::head(r.output.outputs[0].token_ids, want.size()),
              testing::head(want, kNewTokens));
  }

  static void expect_idle_and_whole(LLM& llm, std::uint64_t errors) {
    const EngineStats s = llm.stats();
    EXPECT_EQ(s.num_running + s.num_waiting, 0u);
    EXPECT_EQ(s.num_free_blocks, s.num_blocks);
    EXPECT_EQ(s.invariant_violation, "");
    EXPECT_EQ(s.counters.finished_error, errors);
  }

  testing::TempDir model_{"fault_model"};
  std::vector<testing::Golden> goldens_;
};

TEST_F(StepFaults, AStepThatThrowsEndsTheRequestsInItAndTheEngineGoesOn) {
  // Two run at once: `shared` needs more steps than run ahead of the faulty prompt's prefill, so
  // it shares that step; the two behind them wait and run after it.
  LLM llm(config({"scheduler.max_num_seqs=2"}));
  std::vector<GenerateRequest> requests{golden(0), greedy({kThrowToken, 1, 2, 3}), golden(1),
                                        golden(2)};
  const std::vector<GenerateResult> results = llm.generate(std::move(requests));
  ASSERT_EQ(results.size(), 4u);
  for (int shared : {0, 1}) {
    EXPECT_FALSE(results[shared].ok()) << "request " << shared;
    EXPECT_NE(results[shared].error.find("injected fault: a step with token 151000 threw"),
              std::string::npos)
        << results[shared].error;
  }
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
  ASSERT_FALSE(hung.ok());
  EXPECT_NE(hung.error.find("did not answer step"), std::string::npos) << hung.error;
  EXPECT_NE(hung.error.find("runtime.step_timeout_s"), std::string::npos) << hung.error;
  // Detected by the timeout, well before the worker came back.
  EXPECT_LT(waited, std::chrono::seconds(kHangSeconds) - 1s);
  // Once it answers again (its late answers dropped), the engine serves new requests.
  std::this_thread::sleep_until(start + std::chrono::seconds(kHangSeconds) + 500ms);
  expect_golden(llm.generate({golden(0)})[0], 0);
  expect_idle_and_whole(llm, 1);
}

}  // namespace
}  // namespace minivllm
