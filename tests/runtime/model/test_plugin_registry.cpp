// Loading plugins and models: what works, and the error for each way it fails.
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "error_message.hpp"
#include "backend/cpu_ops.hpp"
#include "model/load_model.hpp"
#include "checkpoint/safetensors.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;

::testing::AssertionResult HasSubstr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

using testing::error_message;

TEST(PluginRegistry, FindsBothPluginsInTheBuildTree) {
  const auto registry = PluginRegistry::load({testing::plugin_dir()});
  EXPECT_EQ(registry.architectures(),
            (std::vector<std::string>{"LlamaForCausalLM", "Qwen3ForCausalLM"}));
  EXPECT_EQ(registry.plugin_of("Qwen3ForCausalLM").filename(), "qwen3.so");
  EXPECT_EQ(registry.plugin_of("LlamaForCausalLM").filename(), "llama3.so");
}

TEST(PluginRegistry, MissingPluginDirIsNamed) {
  const fs::path dir = "/nonexistent/minivllm-plugins";
  EXPECT_TRUE(HasSubstr(error_message([&] { PluginRegistry::load({dir}); }),
              dir.string() + ": plugin dir does not exist"));
}

TEST(PluginRegistry, AbiMismatchNamesThePluginFile) {
  testing::TempDir dir("plugins");
  const fs::path copy = dir.path() / "bad_abi_plugin.so";
  fs::copy_file(MINIVLLM_BAD_ABI_PLUGIN, copy);
  const std::string error = error_message([&] { PluginRegistry::load({dir.path()}); });
  EXPECT_TRUE(HasSubstr(error, copy.string() + ": plugin ABI version " +
                               std::to_string(kPluginAbiVersion + 1)));
  EXPECT_TRUE(HasSubstr(error, "rebuild the plugin"));
}

TEST(PluginRegistry, LibraryWithoutEntryPointIsRejected) {
  testing::TempDir dir("plugins");
  const fs::path fake = dir.path() / "not_a_plugin.so";
  std::ofstream(fake) << "not an ELF file";
  EXPECT_TRUE(HasSubstr(error_message([&] { PluginRegistry::load({dir.path()}); }),
              fake.string() + ": cannot load plugin"));
}

TEST(PluginRegistry, AnArchitectureRegisteredTwiceIsAnError) {
  const std::string error =
      error_message([] { PluginRegistry::load({testing::plugin_dir(), testing::plugin_dir()}); });
  EXPECT_TRUE(HasSubstr(error, "registers architecture LlamaForCausalLM, already registered by"));
}

class ModelLoading : public ::testing::Test {
 protected:
  void SetUp() override { model_dir_ = testing::make_tiny_checkpoint(dir_.path(), "tiny-qwen3", "qwen3"); }

  std::string load_error() {
    return error_message([&] { load_model(registry_, model_dir_, ops_); });
  }

  // Rewrites model.safetensors with `name`'s shape replaced (or the tensor dropped when empty).
  void rewrite_tensor(const std::string& name, const Shape& shape) {
    const fs::path file = model_dir_ / "model.safetensors";
    const fs::path original = dir_.path() / "original.safetensors";
    fs::rename(file, original);
    const auto source = SafetensorsFile::open(original);
    std::vector<TensorSpec> specs;
    std::vector<const TensorView*> views;
    for (const auto& t : source.tensors()) {
      if (t.name == name && shape.empty()) continue;
      specs.push_back({t.name, t.dtype, t.name == name ? shape : t.shape});
      views.push_back(&t);
    }
    write_safetensors(file, specs, {{"format", "pt"}}, [&](std::size_t i, std::int64_t first,
                                                          std::span<std::byte> dest) {
      const std::size_t offset = static_cast<std::size_t>(first) * dtype_size(specs[i].dtype);
      std::copy_n(views[i]->bytes.data() + offset, std::min(dest.size(), views[i]->bytes.size() - offset),
                  dest.data());
    });
  }

  testing::TempDir dir_{"model_loading"};
  fs::path model_dir_;
  CpuOps ops_;
  PluginRegistry registry_ = PluginRegistry::load({testing::plugin_dir()});
};

TEST_F(ModelLoading, LoadsTheTinyQwen3) {
  const auto loaded = load_model(registry_, model_dir_, ops_);
  const auto spec = loaded.model->kv_cache_spec();
  EXPECT_EQ(spec.num_layers, 2);
  EXPECT_EQ(spec.num_kv_heads, 2);
  EXPECT_EQ(spec.head_dim, 32);
}

TEST_F(ModelLoading, UnknownArchitectureNamesTheConfig) {
  std::string config;
  {
    std::ifstream in(model_dir_ / "config.json");
    config.assign(std::istreambuf_iterator<char>(in), {});
  }
  config.replace(config.find("Qwen3ForCausalLM"), 16, "MambaForCausalLM");
  std::ofstream(model_dir_ / "config.json") << config;
  const std::string error = load_error();
  EXPECT_TRUE(HasSubstr(error, (model_dir_ / "config.json").string() +
                               ": no plugin provides architecture MambaForCausalLM"));
  EXPECT_TRUE(HasSubstr(error, "LlamaForCausalLM, Qwen3ForCausalLM"));
}

TEST_F(ModelLoading, MissingPluginForTheArchitecture) {
  testing::TempDir empty("no_plugins");
  const auto none = PluginRegistry::load({empty.path()});
  EXPECT_TRUE(HasSubstr(error_message([&] { load_model(none, model_dir_, ops_); }),
              "no plugin provides architecture Qwen3ForCausalLM (plugins provide: none"));
}

TEST_F(ModelLoading, MissingTensorNamesFileAndTensor) {
  rewrite_tensor("model.layers.1.self_attn.k_norm.weight", {});
  EXPECT_TRUE(HasSubstr(load_error(), (model_dir_ / "model.safetensors").string() +
                                      ": no tensor 'model.layers.1.self_attn.k_norm.weight'"));
}

TEST_F(ModelLoading, WrongShapeNamesFileTensorAndShapes) {
  rewrite_tensor("model.layers.0.mlp.up_proj.weight", {96, 64});
  EXPECT_TRUE(HasSubstr(load_error(), (model_dir_ / "model.safetensors").string() +
                                      ": tensor 'model.layers.0.mlp.up_proj.weight' has shape "
                                      "[96, 64], expected [192, 64]"));
}

}  // namespace
}  // namespace minivllm
