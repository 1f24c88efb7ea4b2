// The checkpoint weight loader: whole tensors, a tensor-parallel rank's column or row split, and
// stacked (fused) weights split part by part.
#include <cstring>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "backend/cpu_ops.hpp"
#include "model/checkpoint_weights.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

class CheckpointWeightsTest : public ::testing::Test {
 protected:
  // Element [row, col] of the bf16 tensor `name` [rows, cols] as stored in the file.
  std::uint16_t stored(const std::string& name, std::int64_t row, std::int64_t col) {
    const TensorView& view = checkpoint_.get(name);
    std::uint16_t v;
    std::memcpy(&v, view.bytes.data() + (row * view.shape[1] + col) * 2, 2);
    return v;
  }
  static std::uint16_t at(const Tensor& t, std::int64_t row, std::int64_t col) {
    return t.data_as<std::uint16_t>()[row * t.dim(1) + col];
  }

  testing::TempDir dir_{"weights"};
  Checkpoint checkpoint_ =
      Checkpoint::open(testing::make_tiny_checkpoint(dir_.path(), "tiny-qwen3", "qwen3"));
  CpuOps ops_;
  const std::string q_proj_ = "model.layers.0.self_attn.q_proj.weight";  // [128, 64]
  const std::string k_proj_ = "model.layers.0.self_attn.k_proj.weight";  // [64, 64]
  const std::string v_proj_ = "model.layers.0.self_attn.v_proj.weight";  // [64, 64]
};

TEST_F(CheckpointWeightsTest, LoadsAWholeTensorInItsCheckpointDtype) {
  CheckpointWeights weights(checkpoint_, ops_);
  const Tensor t = weights.load(q_proj_, {128, 64});
  EXPECT_EQ(t.dtype(), DType::bf16);
  EXPECT_EQ(t.shape(), (Shape{128, 64}));
  EXPECT_EQ(at(t, 5, 7), stored(q_proj_, 5, 7));
}

TEST_F(CheckpointWeightsTest, ColumnSplitTakesTheRanksOutputRows) {
  CheckpointWeights weights(checkpoint_, ops_, 1, 2);
  const Tensor t = weights.load(q_proj_, {128, 64}, Split::column);
  EXPECT_EQ(t.shape(), (Shape{64, 64}));
  for (std::int64_t r : {0, 63}) EXPECT_EQ(at(t, r, 3), stored(q_proj_, 64 + r, 3));
}

TEST_F(CheckpointWeightsTest, RowSplitTakesTheRanksInputColumns) {
  CheckpointWeights weights(checkpoint_, ops_, 1, 2);
  const Tensor t = weights.load(q_proj_, {128, 64}, Split::row);
  EXPECT_EQ(t.shape(), (Shape{128, 32}));
  for (std::int64_t c : {0, 31}) EXPECT_EQ(at(t, 100, c), stored(q_proj_, 100, 32 + c));
}

TEST_F(CheckpointWeightsTest, StackedWeightIsThePartsOneAfterAnother) {
  CheckpointWeights weights(checkpoint_, ops_);
  const Tensor t =
      weights.load_stacked({{q_proj_, {128, 64}}, {k_proj_, {64, 64}}, {v_proj_, {64, 64}}});
  EXPECT_EQ(t.dtype(), DType::bf16);
  EXPECT_EQ(t.shape(), (Shape{256, 64}));
  EXPECT_EQ(at(t, 5, 7), stored(q_proj_, 5, 7));
  EXPECT_EQ(at(t, 128 + 9, 1), stored(k_proj_, 9, 1));
  EXPECT_EQ(at(t, 255, 63), stored(v_proj_, 63, 63));
}

TEST_F(CheckpointWeightsTest, StackedWeightSplitsEachPartOnItsOwn) {
  // Rank r of 2 holds rows [r*64, r*64+64) of q, then [r*32, r*32+32) of k and of v: its own
  // heads of each, not a slice of the stacked tensor.
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    CheckpointWeights weights(checkpoint_, ops_, rank, 2);
    const Tensor t =
        weights.load_stacked({{q_proj_, {128, 64}}, {k_proj_, {64, 64}}, {v_proj_, {64, 64}}});
    ASSERT_EQ(t.shape(), (Shape{128, 64}));
    for (std::int64_t r = 0; r < 64; ++r)
      for (std::int64_t c : {0, 37, 63}) ASSERT_EQ(at(t, r, c), stored(q_proj_, rank * 64 + r, c));
    for (std::int64_t r = 0; r < 32; ++r) {
      for (std::int64_t c : {0, 37, 63}) {
        ASSERT_EQ(at(t, 64 + r, c), stored(k_proj_, rank * 32 + r, c));
        ASSERT_EQ(at(t, 96 + r, c), stored(v_proj_, rank * 32 + r, c));
      }
    }
  }
}

TEST_F(CheckpointWeightsTest, StackedPartsMustShareTheInputWidth) {
  CheckpointWeights weights(checkpoint_, ops_);
  const std::string o_proj = "model.layers.0.self_attn.o_proj.weight";  // [64, 128]
  try {
    weights.load_stacked({{k_proj_, {64, 64}}, {o_proj, {64, 128}}});
    FAIL() << "[64, 64] and [64, 128] do not stack";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor '" + o_proj + "'"), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointWeightsTest, UnevenSplitNamesTheTensor) {
  CheckpointWeights weights(checkpoint_, ops_, 0, 3);
  try {
    weights.load(q_proj_, {128, 64}, Split::column);
    FAIL() << "128 rows do not split 3 ways";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor '" + q_proj_ + "'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace minivllm
