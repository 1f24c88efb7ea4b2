#include <gtest/gtest.h>

#include <minivllm/error.hpp>
#include <minivllm/model_config.hpp>

#include "test_paths.hpp"

namespace minivllm {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_model_config(json, "cfg.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kMinimal =
    R"("architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":100,)"
    R"("hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4)";

TEST(ModelConfig, TinyQwen3) {
  ModelConfig c = load_model_config(minivllm::testing::configs_dir() / "models/tiny-qwen3.json");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Qwen3ForCausalLM"});
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.head_dim, 32);  // explicit: q_proj is wider than hidden
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.eos_token_ids, std::vector<std::int64_t>{151645});
  EXPECT_EQ(c.bos_token_id, 151643);
}

TEST(ModelConfig, TinyLlama3) {
  ModelConfig c = load_model_config(minivllm::testing::configs_dir() / "models/tiny-llama3.json");
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
}

TEST(ModelConfig, DefaultsAndForms) {
  ModelConfig c = parse_model_config("{" + kMinimal + R"(,"eos_token_id":[7,9]})", "cfg.json");
  EXPECT_EQ(c.head_dim, 16);             // hidden / heads
  EXPECT_EQ(c.num_key_value_heads, 4);   // = heads
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{7, 9}));
  EXPECT_FALSE(c.bos_token_id.has_value());
  ModelConfig d = parse_model_config("{" + kMinimal + R"(,"head_dim":null,"eos_token_id":3})", "x");
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_EQ(d.eos_token_ids, std::vector<std::int64_t>{3});
}

TEST(ModelConfig, ErrorsNameFileAndField) {
  EXPECT_NE(error_of("{" + kMinimal.substr(0, kMinimal.find(",\"vocab")) + "}")
                .find("cfg.json: field 'vocab_size': missing"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type":"llama"})").find("field 'architectures'"), std::string::npos);
  EXPECT_NE(error_of("{" + kMinimal + R"(,"num_key_value_heads":3})").find("does not divide"),
            std::string::npos);
  EXPECT_NE(error_of("{" + kMinimal + R"(,"hidden_size":-1})").find("positive integer"),
            std::string::npos);
  EXPECT_NE(error_of("{" + kMinimal + R"(,"eos_token_id":"x"})").find("field 'eos_token_id'"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("cfg.json: not valid JSON"), std::string::npos);
  EXPECT_THROW(load_model_config("/nonexistent/config.json"), Error);
}

}  // namespace
}  // namespace minivllm
