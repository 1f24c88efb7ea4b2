// The plugin toolkit's config.json checks, and each model plugin refusing the values it does not
// build with an error naming the field (they were once silently ignored).
#include <string>

#include <gtest/gtest.h>

#include <minivllm/layers.hpp>

#include "checkpoint/config_json.hpp"
#include "error_message.hpp"
#include "model/plugin_registry.hpp"
#include "backend/cpu_ops.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"

namespace minivllm {
namespace {

using testing::error_message;

std::unique_ptr<ConfigFields> fields(const std::string& body) {
  return parse_config_fields("{" + body + "}", "cfg.json");
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

TEST(DecoderConfig, Llama3RopeScalingIsReadOrRefusedByField) {
  EXPECT_FALSE(layers::read_llama3_rope_scaling(*fields(R"("rope_scaling":null)")).has_value());
  const auto s = layers::read_llama3_rope_scaling(*fields(
      R"("rope_scaling":{"rope_type":"llama3","factor":32,"low_freq_factor":1,)"
      R"("high_freq_factor":4,"original_max_position_embeddings":8192})"));
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->factor, 32.0);
  EXPECT_DOUBLE_EQ(s->high_freq_factor, 4.0);
  EXPECT_EQ(s->original_max_position_embeddings, 8192);
  EXPECT_TRUE(Contains(error_message([] {
    layers::read_llama3_rope_scaling(*fields(R"("rope_scaling":{"rope_type":"yarn","factor":2})"));
  }), "cfg.json: field 'rope_scaling': rope type 'yarn' is not supported"));
  // An error inside rope_scaling names the nested field (its origin string once dangled).
  EXPECT_TRUE(Contains(error_message([] {
    layers::read_llama3_rope_scaling(*fields(
        R"("rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4})"));
  }), "cfg.json rope_scaling: field 'original_max_position_embeddings': missing"));
  EXPECT_TRUE(Contains(error_message([] {
    layers::read_llama3_rope_scaling(*fields(R"("rope_scaling":[1])"));
  }), "field 'rope_scaling': expected an object or null"));
  EXPECT_TRUE(Contains(error_message([] {
    layers::require_plain_rope(*fields(R"("rope_scaling":{"rope_type":"linear","factor":2})"));
  }), "field 'rope_scaling': {\"factor\":2,\"rope_type\":\"linear\"} is not supported"));
}

TEST(DecoderConfig, WhatTheLayersDoNotBuildIsRefused) {
  EXPECT_NO_THROW(layers::check_decoder_config(
      *fields(R"("hidden_act":"silu","attention_bias":false,"use_sliding_window":false,)"
              R"("sliding_window":4096)"),
      false));
  const auto refused = [](const std::string& body, bool qkv_bias) {
    return error_message([&] { layers::check_decoder_config(*fields(body), qkv_bias); });
  };
  EXPECT_TRUE(Contains(refused(R"("hidden_act":"gelu")", false),
                       "cfg.json: field 'hidden_act': 'gelu' is not supported (only silu"));
  EXPECT_TRUE(Contains(refused(R"("attention_bias":true)", false), "field 'attention_bias': true"));
  EXPECT_TRUE(Contains(refused(R"("attention_bias":false)", true), "field 'attention_bias': false"));
  EXPECT_TRUE(Contains(refused(R"("mlp_bias":true)", false), "field 'mlp_bias'"));
  EXPECT_TRUE(Contains(refused(R"("use_sliding_window":true,"sliding_window":4096)", false),
                       "field 'use_sliding_window': sliding-window attention is not supported"));
  EXPECT_TRUE(Contains(refused(R"("sliding_window":4096)", false), "field 'sliding_window'"));
  EXPECT_TRUE(Contains(refused(R"("hidden_act":7)", false), "field 'hidden_act': expected a string"));
}

// Through loading, as `generate` and `info` do: each field once ignored is an error.
class PluginRefusal : public ::testing::TestWithParam<const char*> {};

TEST_P(PluginRefusal, EachInTreePluginRefusesWhatItDoesNotBuild) {
  testing::TempDir dir("refusal");
  const std::string model = GetParam();
  const auto folder = testing::make_tiny_checkpoint(dir.path(), model, model == "tiny-qwen3" ? "qwen3" : "llama3");
  const PluginRegistry plugins = PluginRegistry::load({testing::plugin_dir()});
  CpuOps ops;
  for (const auto& [field, value] :
       {std::pair{"hidden_act", "\"gelu\""}, std::pair{"attention_bias", "true"},
        std::pair{"mlp_bias", "true"}, std::pair{"use_sliding_window", "true"},
        std::pair{"rope_scaling", "{\"rope_type\":\"dynamic\",\"factor\":2}"}}) {
    SCOPED_TRACE(field);
    testing::set_config_field(folder, field, value);
    EXPECT_TRUE(Contains(error_message([&] { load_model(plugins, folder, ops); }),
                         "config.json: field '" + std::string(field) + "'"));
    testing::set_config_field(folder, field, "null");
  }
  EXPECT_NO_THROW(load_model(plugins, folder, ops));
}

INSTANTIATE_TEST_SUITE_P(Models, PluginRefusal, ::testing::Values("tiny-qwen3", "tiny-llama3"));

}  // namespace
}  // namespace minivllm
