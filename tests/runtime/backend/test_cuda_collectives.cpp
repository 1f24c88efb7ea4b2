// CudaOps' collectives through NCCL with a world of one (the one GPU of the test machine): the
// all-reduce leaves a tensor's bits as they are and the all-gather returns them, in f32 and
// bf16; and tiny-qwen3 run through a step runner with CUDA graphs on ops that carry an NCCL
// communicator (so the graphs capture NCCL's calls) gives the logits of ops without one, bit
// for bit, over prefill and replayed decode steps. Skips without a CUDA device.
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include "backend/nccl_communicator.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

NcclRank world_of_one() { return {NcclCommunicator::unique_id(), 0, 1}; }

std::vector<std::byte> bytes_of(CudaOps& ops, const Tensor& t) {
  std::vector<std::byte> out(t.nbytes());
  ops.to_host(t, out.data());
  return out;
}

class CudaCollectives : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!CudaOps::device_available()) GTEST_SKIP() << "no CUDA device visible to this process";
  }
};

TEST_P(CudaCollectives, AWorldOfOneKeepsEveryBit) {
  const NcclRank rank = world_of_one();
  CudaOps ops(GetParam(), 0, false, &rank);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<float> host(5 * 7);
  for (float& v : host) v = value(rng);
  Tensor x = ops.from_host(host.data(), DType::f32, {5, 7});
  const std::vector<std::byte> before = bytes_of(ops, x);
  ops.all_reduce(x);
  EXPECT_EQ(bytes_of(ops, x), before);
  const Tensor gathered = ops.all_gather(x);
  EXPECT_EQ(gathered.shape(), x.shape());
  EXPECT_EQ(bytes_of(ops, gathered), before);
}

TEST_P(CudaCollectives, GraphedStepsWithNcclGiveTheLogitsOfStepsWithout) {
  testing::TempDir temp{"cuda_collectives"};
  const auto dir = testing::make_tiny_checkpoint(temp.path(), "tiny-qwen3", "qwen3");
  const PluginRegistry registry = PluginRegistry::load({testing::plugin_dir()});
  const NcclRank rank = world_of_one();
  constexpr std::int32_t kBlockSize = 16;
  constexpr std::int64_t kBlocks = 64;
  struct Side {
    std::unique_ptr<CudaOps> ops;
    LoadedModel model;
    KvCacheView kv;
    std::unique_ptr<StepRunner> runner;
  };
  // On the heap: the runner's forward refers to the side's model and cache.
  auto side = [&](const NcclRank* nccl) {
    auto s = std::make_unique<Side>();
    s->ops = std::make_unique<CudaOps>(GetParam(), 0, /*cuda_graphs=*/true, nccl);
    s->model = load_model(registry, dir, *s->ops);
    s->kv = allocate_kv_cache(*s->ops, s->model.model->kv_cache_spec(), kBlocks, kBlockSize,
                              GetParam());
    s->runner = s->ops->make_step_runner(
        [&m = *s->model.model, &kv = s->kv](const Batch& b) { return m.forward(b, kv); });
    return s;
  };
  const auto plain = side(nullptr), nccl = side(&rank);

  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int32_t> token(0, 1000);
  const std::vector<std::vector<std::int32_t>> tables = {{3, 9}, {20, 5}, {40, 41}};
  std::vector<std::int32_t> cached = {0, 0, 0};
  const std::vector<std::int32_t> prompt_lens = {9, 17, 4};
  for (int step = 0; step < 8; ++step) {
    BatchBuilder builder(kBlockSize);
    for (std::size_t s = 0; s < tables.size(); ++s) {
      std::vector<std::int32_t> ids(step == 0 ? prompt_lens[s] : 1);
      for (auto& id : ids) id = token(rng);
      builder.add(ids, cached[s], tables[s], LogitsFor::last);
      cached[s] += static_cast<std::int32_t>(ids.size());
    }
    const Batch batch = builder.build();
    EXPECT_EQ(bytes_of(*nccl->ops, nccl->runner->run(batch)),
              bytes_of(*plain->ops, plain->runner->run(batch)))
        << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaCollectives, ::testing::Values(DType::f32, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace minivllm
