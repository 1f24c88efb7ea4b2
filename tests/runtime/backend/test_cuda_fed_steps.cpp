// Fed decode steps on tiny-qwen3: a step queued before the one ahead of it has brought its tokens
// to the host names them by row (token id -1 - r: row r of what the sampler sampled last, in
// CudaOps::sampled_tokens()). Greedy decoding that feeds every step must give exactly the tokens
// of decoding that hands each step its tokens from the host, with CUDA graphs and without, in
// f32 and bf16; a fed id naming a row the last sampling did not have is refused, and so is a
// sample() while another sampling is queued. Skips without a CUDA device.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "backend/cuda_ops.hpp"
#include "backend/cuda_sampler.hpp"
#include "backend/cuda_step_runner.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "tiny_model_on_cuda.hpp"

namespace minivllm {
namespace {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kSeqs = 13;  // a padded graph bucket (16)
constexpr int kDecodeSteps = 24;
constexpr std::int32_t kBlocksPerSeq = 8;

class CudaFedStepsTest : public testing::TinyModelOnCuda {
 protected:
  void SetUp() override {
    TinyModelOnCuda::SetUp();
    if (IsSkipped()) return;
    std::mt19937 rng(11);
    std::uniform_int_distribution<std::int32_t> token(
        0, static_cast<std::int32_t>(loaded_.config.vocab_size - 1));
    for (std::int32_t s = 0; s < kSeqs; ++s) {
      prompts_.emplace_back(static_cast<std::size_t>(3 + s % 7));
      for (std::int32_t& t : prompts_.back()) t = token(rng);
    }
  }

  // kDecodeSteps greedy tokens of every sequence after its prompt, over a KV cache of its own;
  // fed: each decode step queued before the one ahead of it is collected.
  std::vector<std::vector<std::int32_t>> decode(bool graphs, bool fed) {
    KvCacheView kv = allocate_kv_cache(*ops_, loaded_.model->kv_cache_spec(),
                                       kSeqs * kBlocksPerSeq, kBlockSize, GetParam());
    cuda::CudaStepRunner runner(
        *ops_, [&](const Batch& b) { return loaded_.model->forward(b, kv); }, graphs);
    CudaSampler sampler(*ops_);
    SamplingParams greedy;
    greedy.temperature = 0.0;
    std::vector<std::vector<std::int32_t>> tables(kSeqs), outputs(kSeqs);
    for (std::int32_t s = 0; s < kSeqs; ++s)
      for (std::int32_t b = 0; b < kBlocksPerSeq; ++b) tables[s].push_back(s * kBlocksPerSeq + b);
    std::mt19937_64 rng(1);
    const std::vector<std::int32_t> eos;
    auto rows = [&] {
      std::vector<SamplerRow> r;
      for (std::int32_t s = 0; s < kSeqs; ++s)
        r.push_back({{}, &greedy, prompts_[s], outputs[s], eos, &rng});
      return r;
    };
    auto take = [&](const std::vector<SampledToken>& tokens) {
      for (std::int32_t s = 0; s < kSeqs; ++s) outputs[s].push_back(tokens.at(s).token);
    };

    BatchBuilder prefill(kBlockSize);
    for (std::int32_t s = 0; s < kSeqs; ++s) prefill.add(prompts_[s], 0, tables[s]);
    Batch batch = prefill.build();
    sampler.queue(runner.run(batch), rows());
    for (int step = 0; step < kDecodeSteps; ++step) {
      if (!fed) take(sampler.collect());
      BatchBuilder builder(kBlockSize);
      for (std::int32_t s = 0; s < kSeqs; ++s) {
        // Row s of the step ahead, or its token when the host has it.
        const std::int32_t token = fed ? -1 - s : outputs[s].back();
        const auto cached = static_cast<std::int32_t>(prompts_[s].size()) + step;
        builder.add(std::vector<std::int32_t>{token}, cached, tables[s]);
      }
      batch = builder.build();
      sampler.queue(runner.run(batch), rows());
      if (fed) take(sampler.collect());
    }
    take(sampler.collect());
    return outputs;
  }

  std::vector<std::vector<std::int32_t>> prompts_;
};

TEST_P(CudaFedStepsTest, FedStepsSampleWhatStepsGivenTheirTokensSample) {
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "CUDA graphs" : "eager steps");
    const auto given = decode(graphs, false);
    const auto fed = decode(graphs, true);
    ASSERT_EQ(given.size(), fed.size());
    for (std::int32_t s = 0; s < kSeqs; ++s) {
      EXPECT_EQ(given[s].size(), static_cast<std::size_t>(kDecodeSteps + 1));
      EXPECT_EQ(fed[s], given[s]) << "sequence " << s;
    }
  }
}

TEST_P(CudaFedStepsTest, FedIdPastTheSampledRowsIsRefused) {
  KvCacheView kv = allocate_kv_cache(*ops_, loaded_.model->kv_cache_spec(), kBlocksPerSeq,
                                     kBlockSize, GetParam());
  cuda::CudaStepRunner runner(
      *ops_, [&](const Batch& b) { return loaded_.model->forward(b, kv); }, false);
  ops_->set_sampled_rows(2);
  const std::vector<std::int32_t> table = {0, 1};
  BatchBuilder builder(kBlockSize);
  builder.add(std::vector<std::int32_t>{-3}, 4, table);
  const Batch batch = builder.build();
  try {
    runner.run(batch);
    FAIL() << "a fed id past the sampled rows ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 sampled rows"), std::string::npos) << e.what();
  }
  ops_->set_sampled_rows(0);  // no sampling left its tokens on the device
  EXPECT_THROW(runner.run(batch), Error) << "with no sampled rows, negative ids are refused";
}

TEST_P(CudaFedStepsTest, SampleWithASamplingQueuedIsRefused) {
  KvCacheView kv = allocate_kv_cache(*ops_, loaded_.model->kv_cache_spec(), kBlocksPerSeq,
                                     kBlockSize, GetParam());
  cuda::CudaStepRunner runner(
      *ops_, [&](const Batch& b) { return loaded_.model->forward(b, kv); }, false);
  CudaSampler sampler(*ops_);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  std::mt19937_64 rng(1);
  const std::vector<std::int32_t> none;
  const std::vector<SamplerRow> rows = {{{}, &greedy, prompts_[0], none, none, &rng}};
  BatchBuilder builder(kBlockSize);
  builder.add(prompts_[0], 0, std::vector<std::int32_t>{0});
  const Tensor logits = runner.run(builder.build());
  sampler.queue(logits, rows);
  EXPECT_EQ(sampler.queued(), 1);
  // sample() would collect the queued sampling, not its own.
  EXPECT_THROW(sampler.sample(logits, rows), Error);
  EXPECT_EQ(sampler.collect().size(), 1u);
  EXPECT_EQ(sampler.sample(logits, rows).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaFedStepsTest, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace minivllm
