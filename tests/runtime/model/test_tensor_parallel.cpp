// Tensor parallelism of the decoder layers on the CPU backend: N ranks, each a thread with its
// own CpuOps in one CpuCollectives group and its shard of the weights (q/k/v and gate/up by
// column, o and down by row with an all-reduce, embedding and lm_head by vocabulary with the
// logits gathered), give TP=1's logits within 1e-5 of each row's largest, the same bits on every
// rank, and the goldens. TP=4 replicates the tiny models' 2 KV heads.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "backend/cpu_collectives.hpp"
#include "backend/cpu_ops.hpp"
#include "golden_forward.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

struct ModelCase {
  std::string name;
  std::string tokenizer_family;
};

// Every golden forward position's logits row, in order.
std::vector<std::vector<float>> forward_rows(Model& model, Ops& ops, const json& golden,
                                             std::int64_t vocab) {
  std::vector<std::vector<float>> rows;
  testing::for_each_forward_position(model, ops, golden, vocab, DType::f32,
                                     [&](const testing::PositionGolden&, const float* row) {
                                       rows.emplace_back(row, row + vocab);
                                     });
  return rows;
}

class TensorParallel : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    const ModelCase& c = GetParam();
    golden_ = json::parse(std::ifstream(testing::test_data_dir() / "golden" / (c.name + ".json")));
    model_dir_ = testing::make_tiny_checkpoint(dir_.path(), c.name, c.tokenizer_family);
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load({testing::plugin_dir()}));
  }

  // Each rank's rows, from `ranks` threads.
  std::vector<std::vector<std::vector<float>>> run_ranks(int ranks) {
    auto group = std::make_shared<CpuCollectives>(ranks);
    std::vector<std::vector<std::vector<float>>> rows(static_cast<std::size_t>(ranks));
    std::vector<std::string> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        try {
          CpuOps ops(group, r);
          LoadedModel m = load_model(*registry_, model_dir_, ops, r, ranks);
          rows[static_cast<std::size_t>(r)] = forward_rows(*m.model, ops, golden_, m.config.vocab_size);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
          group->close(e.what());
        }
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    return rows;
  }

  testing::TempDir dir_{"tensor-parallel"};
  json golden_;
  std::filesystem::path model_dir_;
  std::unique_ptr<PluginRegistry> registry_;
};

TEST_P(TensorParallel, TwoAndFourRanksGiveOneRanksLogits) {
  CpuOps ops;
  LoadedModel one = load_model(*registry_, model_dir_, ops);
  const auto want = forward_rows(*one.model, ops, golden_, one.config.vocab_size);
  ASSERT_FALSE(want.empty());
  for (int ranks : {2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const auto got = run_ranks(ranks);
    double worst = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto& rows = got[static_cast<std::size_t>(r)];
      ASSERT_EQ(rows.size(), want.size()) << "rank " << r;
      if (r > 0) {
        EXPECT_EQ(rows, got[0]) << "rank " << r << " got other logits than rank 0";
      }
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
      double diff = 0, largest = 0;
      for (std::size_t v = 0; v < want[i].size(); ++v) {
        diff = std::max(diff, std::abs(double(got[0][i][v]) - want[i][v]));
        largest = std::max(largest, std::abs(double(want[i][v])));
      }
      worst = std::max(worst, diff / largest);
      EXPECT_LE(diff / largest, 1e-5) << "row " << i;
    }
    std::cout << GetParam().name << " TP=" << ranks << ": max |a-b| / max |b| over "
              << want.size() << " rows " << worst << "\n";
    // And against the goldens, as the golden parity test holds one rank to.
    std::size_t row = 0;
    testing::for_each_forward_position(
        *one.model, ops, golden_, one.config.vocab_size, DType::f32,
        [&](const testing::PositionGolden& g, const float*) {
          EXPECT_LE(testing::top_logit_error(got[0][row++].data(), g), 1e-3) << g.where;
        });
  }
}

// A rank whose step throws aborts the group: a rank waiting in a collective fails instead of
// waiting forever, and so does its next one in that step; the next step mends the group.
TEST(CpuCollectivesTest, AnAbortedStepFailsEveryRankAndTheNextStepMends) {
  CpuCollectives group(2);
  std::vector<float> a{1, 2}, b{10, 20};
  std::string waiting_error;
  std::thread waiting([&] {
    group.begin_step();
    try {
      group.all_reduce(1, b.data(), b.size());
    } catch (const Error& e) {
      waiting_error = e.what();
    }
  });
  group.begin_step();
  group.abort("tensor-parallel rank 0 failed: boom");
  waiting.join();
  EXPECT_EQ(waiting_error, "tensor-parallel rank 0 failed: boom");
  EXPECT_THROW(group.all_reduce(0, a.data(), a.size()), Error);  // still this step
  // The next step is whole again: sums in rank order on both ranks.
  std::thread second([&] {
    group.begin_step();
    group.all_reduce(1, b.data(), b.size());
  });
  group.begin_step();
  group.all_reduce(0, a.data(), a.size());
  second.join();
  EXPECT_EQ(a, (std::vector<float>{11, 22}));
  EXPECT_EQ(b, a);
  // Closed (a rank gone): every later step fails at once.
  group.close("tensor-parallel rank 1 is gone");
  EXPECT_THROW(group.begin_step(), Error);
}

TEST(CpuCollectivesTest, AllGatherPutsEachRanksColumnsInRankOrder) {
  CpuCollectives group(2);
  const std::vector<float> x0{1, 2, 3, 4}, x1{5, 6, 7, 8};  // [2, 2] each
  std::vector<float> out0(8), out1(8);
  std::thread other([&] { group.all_gather(1, x1.data(), 2, 2, out1.data()); });
  group.all_gather(0, x0.data(), 2, 2, out0.data());
  other.join();
  EXPECT_EQ(out0, (std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8}));
  EXPECT_EQ(out1, out0);
}

// The ranks must divide the query heads, and divide or be a multiple of the KV heads.
TEST_P(TensorParallel, RanksThatDoNotSplitTheHeadsAreAClearError) {
  CpuOps ops;
  try {
    load_model(*registry_, model_dir_, ops, 0, 3);
    ADD_FAILURE() << "3 ranks over 4 heads loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor parallel size 3 does not divide the 4 attention heads"),
              std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, TensorParallel,
                         ::testing::Values(ModelCase{"tiny-qwen3", "qwen3"},
                                           ModelCase{"tiny-llama3", "llama3"}),
                         [](const auto& info) {
                           return info.param.name == "tiny-qwen3" ? std::string("Qwen3")
                                                                  : std::string("Llama3");
                         });

}  // namespace
}  // namespace minivllm
