// Every model family the built plugins register, checked for the steps of
// docs/adding-a-model.md: a config in configs/models, a checkpoint tensor list whose every
// tensor the model loads (no weight-map gap), and a chat format for its tokenizer's template.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cpu_ops.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;

// The tokenizer family each in-tree config's model folder is made with.
std::string tokenizer_of(const ModelConfig& config) {
  return config.model_type == "llama" ? "llama3" : "qwen3";
}

TEST(PluginFamilies, EachHasAConfigAWeightMapThatLoadsEveryTensorAndAChatFormat) {
  const PluginRegistry plugins = PluginRegistry::load({testing::plugin_dir()});
  ASSERT_FALSE(plugins.architectures().empty());
  for (const std::string& architecture : plugins.architectures()) {
    SCOPED_TRACE(architecture);
    int configs = 0;
    for (const auto& entry : fs::directory_iterator(testing::configs_dir() / "models")) {
      const ModelConfig config = load_model_config(entry.path());
      if (config.architectures.front() != architecture) continue;
      // The large shapes are the GPU's; the tiny ones prove the same code.
      if (config.hidden_size > 256) continue;
      ++configs;
      SCOPED_TRACE(entry.path().string());
      testing::TempDir dir("families");
      const fs::path model = dir.path() / "m";
      write_random_model(plugins, entry.path(), model, 0);
      CpuOps ops;
      const LoadedModel loaded = load_model(plugins, model, ops);
      EXPECT_EQ(loaded.unused_tensors, std::vector<std::string>{});
      const Tokenizer tok = Tokenizer::from_directory(testing::user_data_dir() / "tokenizers" /
                                                      tokenizer_of(config));
      EXPECT_NE(plugins.family(config, entry.path()).chat_format(tok.chat_template()), nullptr);
    }
    EXPECT_GT(configs, 0) << "no tiny config in configs/models for " << architecture;
  }
}

}  // namespace
}  // namespace minivllm
