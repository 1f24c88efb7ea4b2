#pragma once
// A test fixture: tiny-qwen3's folder as the fault hook's family (fault_plugin.cpp), a cue for
// every fault in its config.json, and the LLM facade's configuration for it.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"
#include "temp_dir.hpp"

namespace minivllm::testing {

constexpr std::int32_t kThrowToken = 151000;
constexpr std::int32_t kHangToken = 151001;
constexpr std::int32_t kDeviceLostToken = 151002;
constexpr std::int32_t kCudaErrorToken = 151003;
constexpr std::int32_t kCudaIllegalAddressToken = 151004;
constexpr int kHangSeconds = 4;
constexpr int kNewTokens = 8;

class FaultModel : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    const fs::path source = user_data_dir() / "models" / "tiny-qwen3";
    for (const auto& entry : fs::directory_iterator(source))
      if (entry.path().filename() != "config.json")
        fs::create_symlink(entry.path(), model_ / entry.path().filename());
    nlohmann::json config = nlohmann::json::parse(std::ifstream(source / "config.json"));
    config["architectures"] = {"FaultInjectingQwen3ForCausalLM"};
    config["model_type"] = "qwen3_fault_injecting";
    config["fault_throw_token_id"] = kThrowToken;
    config["fault_hang_token_id"] = kHangToken;
    config["fault_hang_seconds"] = kHangSeconds;
    config["fault_device_lost_token_id"] = kDeviceLostToken;
    config["fault_cuda_error_token_id"] = kCudaErrorToken;
    config["fault_cuda_illegal_address_token_id"] = kCudaIllegalAddressToken;
    std::ofstream(model_ / "config.json") << config.dump(2);
    goldens_ = load_goldens("tiny-qwen3");
  }

  Config config(std::vector<std::string> overrides) {
    using nlohmann::json;
    overrides.insert(overrides.begin(),
                     {"model.path=" + json(model_.path().string()).dump(),
                      "runtime.plugin_dirs=[" + json(env_path("MINIVLLM_FAULT_PLUGIN_DIR").string()).dump() + "]",
                      "model.max_model_len=1024"});
    return load_config(tiny_config_file("tiny-qwen3"), overrides);
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
    EXPECT_EQ(head(r.output.outputs[0].token_ids, want.size()), head(want, kNewTokens));
  }

  static void expect_failed_with(const GenerateResult& r, const std::string& text) {
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find(text), std::string::npos) << r.error;
  }

  static void expect_idle_and_whole(LLM& llm, std::uint64_t errors) {
    const EngineStats s = llm.stats();
    EXPECT_EQ(s.num_running + s.num_waiting, 0u);
    EXPECT_EQ(s.num_free_blocks, s.num_blocks);
    EXPECT_EQ(s.invariant_violation, "");
    EXPECT_EQ(s.counters.finished_error, errors);
  }

  TempDir model_{"fault_model"};
  std::vector<Golden> goldens_;
};

}  // namespace minivllm::testing
