#pragma once
// A test fixture: tiny-qwen3 (random-v1) loaded on a CudaOps of the test's dtype. Skips without
// a CUDA device (a derived SetUp returns when IsSkipped()).
#include <memory>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"

namespace minivllm::testing {

class TinyModelOnCuda : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!CudaOps::device_available()) GTEST_SKIP() << "no CUDA device visible to this process";
    ops_ = std::make_unique<CudaOps>(GetParam());
    const auto dir = make_tiny_checkpoint(dir_.path(), "tiny-qwen3", "qwen3");
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load({plugin_dir()}));
    loaded_ = load_model(*registry_, dir, *ops_);
  }

  TempDir dir_{"tiny_model_on_cuda"};
  std::unique_ptr<CudaOps> ops_;  // declared before the model, which uses it: destroyed after
  std::unique_ptr<PluginRegistry> registry_;
  LoadedModel loaded_;
};

}  // namespace minivllm::testing
