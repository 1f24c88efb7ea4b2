// minivllm checkpoint: write a random-v1 checkpoint for a Hugging Face config.
#include <chrono>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "checkpoint/random_checkpoint.hpp"
#include "cli/commands.hpp"

namespace minivllm::cli {

namespace {
struct CheckpointArgs {
  std::string hf_config;
  std::string out;
  std::uint64_t seed = 0;
};
}  // namespace

void add_checkpoint_command(CLI::App& app) {
  auto args = std::make_shared<CheckpointArgs>();
  CLI::App* cmd = app.add_subcommand(
      "checkpoint", "Write a deterministic random-weight (random-v1) checkpoint for a HF config");
  cmd->add_option("--hf-config", args->hf_config, "Hugging Face config.json")->required();
  cmd->add_option("--out", args->out, "output folder (created if needed)")->required();
  cmd->add_option("--seed", args->seed, "global seed, any 64-bit unsigned integer")
      ->default_val(0);
  cmd->callback([args] {
    auto start = std::chrono::steady_clock::now();
    write_random_checkpoint(args->hf_config, args->out, args->seed);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto tensors = random_v1_tensors(load_model_config(args->hf_config));
    std::int64_t params = 0;
    for (const TensorSpec& t : tensors) params += t.numel();
    std::printf("wrote %zu tensors, %lld parameters to %s in %.2f s\n", tensors.size(),
                static_cast<long long>(params), args->out.c_str(), seconds);
  });
}

}  // namespace minivllm::cli
