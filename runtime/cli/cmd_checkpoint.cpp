// minivllm checkpoint: write a random-v1 checkpoint for a Hugging Face config.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>

#include <minivllm/error.hpp>

#include <CLI/CLI.hpp>

#include "checkpoint/random_checkpoint.hpp"
#include "cli/commands.hpp"

namespace minivllm::cli {

namespace {
struct CheckpointArgs {
  std::string hf_config;
  std::string out;
  std::string seed = "0";
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
}  // namespace

void add_checkpoint_command(CLI::App& app) {
  auto args = std::make_shared<CheckpointArgs>();
  CLI::App* cmd = app.add_subcommand(
      "checkpoint", "Write a deterministic random-weight (random-v1) checkpoint for a HF config");
  cmd->add_option("--hf-config", args->hf_config, "Hugging Face config.json")->required();
  cmd->add_option("--out", args->out, "output folder (created if needed)")->required();
  cmd->add_option("--seed", args->seed, "global seed, any 64-bit unsigned integer (default 0)");
  cmd->callback([args] {
    const std::uint64_t seed = parse_seed(args->seed);
    auto start = std::chrono::steady_clock::now();
    write_random_checkpoint(args->hf_config, args->out, seed);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto tensors = random_v1_tensors(load_model_config(args->hf_config));
    std::int64_t params = 0;
    for (const TensorSpec& t : tensors) params += t.numel();
    std::printf("wrote %zu tensors, %lld parameters to %s in %.2f s\n", tensors.size(),
                static_cast<long long>(params), args->out.c_str(), seconds);
  });
}

}  // namespace minivllm::cli
