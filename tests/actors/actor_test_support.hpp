#pragma once
// Shared by the actor tests: the tiny models' configs (pointed at the set-up's checkpoints and
// the build's plugins) and their greedy goldens.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/config.hpp>
#include "greedy_goldens.hpp"
#include "actors/runtime_spec.hpp"
#include "test_paths.hpp"

namespace minivllm::testing {

constexpr int kGoldenNewTokens = 32;
constexpr double kMarginTolerance = 1e-3;

// The goldens' prompts with the tokens a correct greedy run must start with.
struct Golden {
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> expected;
};

inline std::vector<Golden> load_goldens(const std::string& model) {
  std::vector<Golden> goldens;
  for (const GreedyGolden& g : load_greedy_goldens(model))
    goldens.push_back({g.prompt, g.reliable_tokens(kMarginTolerance)});
  return goldens;
}

// configs/<model>.toml with the set-up's checkpoint, the build's plugins, then `overrides`.
inline std::vector<std::string> tiny_overrides(const std::string& model,
                                               std::vector<std::string> overrides = {}) {
  const auto model_dir = user_data_dir() / "models" / model;
  const auto plugins = env_path("MINIVLLM_PLUGIN_DIR");
  overrides.insert(overrides.begin(), {"model.path=" + nlohmann::json(model_dir.string()).dump(),
                                       "runtime.plugin_dirs=[" + nlohmann::json(plugins.string()).dump() + "]"});
  return overrides;
}

inline std::filesystem::path tiny_config_file(const std::string& model) {
  return configs_dir() / (model + ".toml");
}

inline Config tiny_config(const std::string& model, std::vector<std::string> overrides = {}) {
  return load_config(tiny_config_file(model), tiny_overrides(model, std::move(overrides)));
}

// n requests cycling through the golden prompts: mixed lengths, repeated prompts.
inline std::vector<std::size_t> mixed_picks(std::size_t n, std::size_t num_goldens) {
  std::vector<std::size_t> picks;
  for (std::size_t i = 0; i < n; ++i) picks.push_back((i * 3) % num_goldens);
  return picks;
}

// The first `want.size()` generated tokens, for comparing with a golden.
inline std::vector<std::int32_t> head(const std::vector<std::int32_t>& got, std::size_t n) {
  return {got.begin(), got.begin() + static_cast<std::ptrdiff_t>(std::min(n, got.size()))};
}

}  // namespace minivllm::testing
