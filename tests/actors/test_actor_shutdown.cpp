// The worker's model runner lives on one thread and is gone when the facade is: it is built, used
// and destroyed on the same thread, before ~LLM returns, however the last step ends. (A request
// whose only step ends it, max_tokens 1, can let the runtime shut down while the worker's thread
// still holds the worker actor's last reference from sending that step's result back; the race
// itself is timing-dependent, test_job_thread.cpp checks that case of JobThread directly.)
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actors/runtime_spec.hpp"
#include "runtime/engine/fake_model_runner.hpp"

namespace minivllm {
namespace {

constexpr int kVocab = 64;
constexpr int kNumBlocks = 64;
constexpr int kBlockSize = 16;

// Which threads a runner was built, run and destroyed on.
struct RunnerThreads {
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::atomic<bool> destroyed = false;

  void note() {
    std::lock_guard lock(mutex);
    seen.insert(std::this_thread::get_id());
  }
};

class ThreadNotingRunner final : public ModelRunner {
 public:
  explicit ThreadNotingRunner(std::shared_ptr<RunnerThreads> threads)
      : threads_(std::move(threads)) {
    threads_->note();
  }
  ~ThreadNotingRunner() override {
    threads_->note();
    threads_->destroyed = true;
  }
  int vocab_size() const override { return model_.vocab_size(); }
  std::span<const float> execute(const Batch& batch) override {
    threads_->note();
    return model_.execute(batch);
  }

 private:
  std::shared_ptr<RunnerThreads> threads_;
  testing::FakeModelRunner model_{kVocab, kNumBlocks, kBlockSize};
};

TEST(ActorShutdown, TheRunnerLivesOnOneThreadAndIsGoneWithTheFacade) {
  for (int round = 0; round < 40; ++round) {
    auto threads = std::make_shared<RunnerThreads>();
    {
      RuntimeSpec spec;
      spec.engine.scheduler = {8, 256, 128, false};
      spec.engine.cache = {kBlockSize, kNumBlocks, true};
      spec.make_runner = [threads](const WorkerPlace&) {
        return LoadedRunner{std::make_unique<ThreadNotingRunner>(threads), kNumBlocks};
      };
      LLM llm(std::move(spec));
      SamplingParams params;
      params.temperature = 0.0;
      params.max_tokens = round % 2 == 0 ? 1 : 3;
      const std::vector<std::int32_t> prompt(64, round % kVocab);
      for (int request = 0; request < 2; ++request) {
        const auto outputs = llm.generate(std::vector<std::vector<std::int32_t>>{prompt}, params);
        ASSERT_EQ(outputs.at(0).outputs.at(0).token_ids.size(),
                  static_cast<std::size_t>(params.max_tokens));
      }
    }
    EXPECT_TRUE(threads->destroyed) << "round " << round;
    std::lock_guard lock(threads->mutex);
    EXPECT_EQ(threads->seen.size(), 1u) << "round " << round;
    EXPECT_EQ(threads->seen.count(std::this_thread::get_id()), 0u) << "round " << round;
  }
}

}  // namespace
}  // namespace minivllm
