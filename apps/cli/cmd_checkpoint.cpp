// minivllm checkpoint: write a random-v1 checkpoint for a Hugging Face config, with the tensors
// the config's model family (its plugin) lists.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>

#include <minivllm/error.hpp>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/config_options.hpp"
#include "cli/progress_bar.hpp"
#include "model/random_model.hpp"

namespace minivllm::cli {

namespace {
struct CheckpointArgs {
  std::string hf_config;
  std::string out;
  std::string seed = "0";
  std::vector<std::string> overrides;
};

// Decimal digits only, up to 2^64 - 1 (CLI11 would wrap "-1" and overflow silently).
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw Error("--seed: expected an unsigned 64-bit integer (0 to 18446744073709551615), got '" +
                text + "'");
  return seed;
}

// Only the plugin search path means anything here: any other key would be ignored, so it is
// refused.
Config checkpoint_config(const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides)
    if (!o.starts_with("runtime.plugin_dirs="))
      throw Error("--set " + o + ": checkpoint takes only runtime.plugin_dirs (it loads no model)");
  Config config = load_overrides(overrides);
  with_default_plugin_dirs(config);
  return config;
}
}  // namespace

void add_checkpoint_command(CLI::App& app) {
  auto args = std::make_shared<CheckpointArgs>();
  CLI::App* cmd = app.add_subcommand(
      "checkpoint", "Write a deterministic random-weight (random-v1) checkpoint for a HF config");
  cmd->add_option("--hf-config", args->hf_config, "Hugging Face config.json")->required();
  cmd->add_option("--out", args->out, "output folder (created if needed)")->required();
  cmd->add_option("--seed", args->seed, "global seed, any 64-bit unsigned integer (default 0)");
  cmd->add_option("--set", args->overrides,
                  "runtime.plugin_dirs=[...]: where the model's plugin is (repeatable)")
      ->take_all()
      ->expected(1);
  cmd->callback([args] {
    const std::uint64_t seed = parse_seed(args->seed);
    const Config config = checkpoint_config(args->overrides);
    const PluginRegistry plugins = PluginRegistry::load(config.runtime.plugin_dirs);
    auto start = std::chrono::steady_clock::now();
    std::vector<CheckpointTensor> tensors;
    {
      ProgressBar bar("writing " + args->out, "MB");
      tensors = write_random_model(plugins, args->hf_config, args->out, seed,
                                   [&bar](std::uint64_t done, std::uint64_t total) {
                                     bar.update(done >> 20, total >> 20);
                                   });
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::int64_t params = 0;
    for (const CheckpointTensor& t : tensors) params += shape_numel(t.shape);
    std::printf("wrote %zu tensors, %lld parameters to %s in %.2f s\n", tensors.size(),
                static_cast<long long>(params), args->out.c_str(), seconds);
  });
}

}  // namespace minivllm::cli
