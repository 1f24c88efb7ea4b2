// The worker group: the runtime with two workers (fake CPU models, one per "device") answers as
// with one, sizes the KV cache as the smaller worker's, and a worker that fails a step or cannot
// load is named in the error; the runtime serves the next requests after a failed step.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>
#include <minivllm/llm.hpp>

#include "actors/runtime_spec.hpp"
#include "runtime/engine/fake_model_runner.hpp"

namespace minivllm {
namespace {

constexpr int kVocab = 128;
constexpr int kBlockSize = 16;
constexpr int kNewTokens = 8;

// The fake model, failing its `fail_at`-th step (1-based; 0: never) once.
class FailingOnceRunner final : public ModelRunner {
 public:
  FailingOnceRunner(int num_blocks, int fail_at)
      : inner_(kVocab, num_blocks, kBlockSize), fail_at_(fail_at) {}
  int vocab_size() const override { return kVocab; }
  std::span<const float> execute(const Batch& batch) override {
    if (++steps_ == fail_at_) throw Error("injected failure in step " + std::to_string(steps_));
    return inner_.execute(batch);
  }

 private:
  testing::FakeModelRunner inner_;
  int fail_at_;
  int steps_ = 0;
};

// Two workers on "devices" 0 and 1 holding `blocks0` and `blocks1` KV blocks; device 1 fails its
// `fail_at`-th step, or throws `load_error` while loading.
RuntimeSpec two_workers(int blocks0, int blocks1, int fail_at = 0, std::string load_error = "") {
  RuntimeSpec spec;
  spec.engine.scheduler = {32, 1024, 256, false};
  spec.engine.cache = {kBlockSize, 0, true};  // 0: the group says
  spec.devices = {0, 1};
  spec.make_runner = [=](const WorkerPlace& place) {
    const int device = place.device;
    if (device == 1 && !load_error.empty()) throw Error(load_error);
    const int blocks = device == 0 ? blocks0 : blocks1;
    return LoadedRunner{std::make_unique<FailingOnceRunner>(blocks, device == 1 ? fail_at : 0),
                        blocks};
  };
  return spec;
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0;
  p.max_tokens = kNewTokens;
  p.ignore_eos = true;
  return p;
}

std::vector<std::vector<std::int32_t>> prompts(int count, int salt) {
  std::vector<std::vector<std::int32_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<std::int32_t>& p = out.emplace_back();
    for (int k = 0; k < 5 + (i * 11) % 40; ++k) p.push_back((i * 31 + k * 7 + salt * 101) % kVocab);
  }
  return out;
}

TEST(WorkerGroup, TwoWorkersAnswerAsOneWithTheSmallerKVCache) {
  LLM llm(two_workers(300, 200));
  const auto ps = prompts(16, 1);
  const std::vector<RequestOutput> outs = llm.generate(ps, greedy());
  ASSERT_EQ(outs.size(), ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ(outs[i].outputs.at(0).token_ids, testing::reference_greedy(ps[i], kVocab, kNewTokens))
        << "request " << i;
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.num_blocks, 200u);
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
  EXPECT_EQ(stats.invariant_violation, "");
}

TEST(WorkerGroup, AFailedStepNamesTheWorkerAndTheRuntimeServesOn) {
  LLM llm(two_workers(300, 300, /*fail_at=*/3));
  std::vector<GenerateRequest> first;
  for (auto& p : prompts(4, 2)) first.push_back({"", "", p, {}, greedy()});
  int failed = 0;
  for (const GenerateResult& r : llm.generate(first)) {
    if (r.ok()) continue;
    ++failed;
    EXPECT_NE(r.error.find("worker rank 1 (device 1)"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("injected failure in step 3"), std::string::npos) << r.error;
  }
  EXPECT_GT(failed, 0);
  // Fresh prompts (none in the prefix cache of the failed step): all served.
  const auto ps = prompts(6, 3);
  const std::vector<RequestOutput> outs = llm.generate(ps, greedy());
  for (std::size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ(outs[i].outputs.at(0).token_ids, testing::reference_greedy(ps[i], kVocab, kNewTokens))
        << "request " << i;
  const EngineStats stats = llm.stats();
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
}

TEST(WorkerGroup, AWorkerThatCannotLoadIsNamed) {
  try {
    LLM llm(two_workers(300, 300, 0, "out of device memory"));
    FAIL() << "the runtime started without worker 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("worker rank 1 (device 1): out of device memory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace minivllm
