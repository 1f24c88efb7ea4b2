// minivllm info: resolve a launch configuration and check its model folder as generate would
// before it runs (the same loading code, on the CPU backend, without a KV cache).
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/model_config.hpp>

#include "actors/loaded_model_runner.hpp"

#include "checkpoint/safetensors.hpp"
#include "engine/generation_config.hpp"
#include "cli/commands.hpp"
#include "cli/config_options.hpp"

namespace minivllm::cli {

void add_info_command(CLI::App& app) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Print the resolved configuration and a summary of its model checkpoint");
  options->add_to(*cmd);
  cmd->callback([options] {
    const Config config = options->load();
    // What generate checks before it runs: the engine's side (config.json, max_model_len, the
    // scheduler's limits, the tokenizer), then the worker's (the plugin, every tensor).
    runtime_spec(config);
    const std::vector<std::string> unused = check_model_folder(config);
    const ModelConfig model = load_model_config(config.model.path / "config.json");
    const Checkpoint checkpoint = Checkpoint::open(config.model.path);
    std::int64_t params = 0;
    for (const TensorView* t : checkpoint.tensors()) params += t->numel();
    std::printf("%s", to_toml(config).c_str());
    std::printf(
        "\n# model: %s (%s), %lld layers, hidden %lld, heads %lld/%lld kv, head_dim %lld, "
        "vocab %lld\n# checkpoint: %zu tensors, %lld parameters, %.1f MB\n",
        model.architectures.front().c_str(), model.model_type.c_str(),
        static_cast<long long>(model.num_hidden_layers), static_cast<long long>(model.hidden_size),
        static_cast<long long>(model.num_attention_heads),
        static_cast<long long>(model.num_key_value_heads), static_cast<long long>(model.head_dim),
        static_cast<long long>(model.vocab_size), checkpoint.tensors().size(),
        static_cast<long long>(params), static_cast<double>(checkpoint.total_bytes()) / 1e6);
    const GenerationConfig generation = config.model.generation_config
                                            ? load_generation_config(config.model.path)
                                            : GenerationConfig{};
    std::string eos;
    for (std::int64_t id : generation.eos_token_ids.empty() ? model.eos_token_ids
                                                            : generation.eos_token_ids)
      eos += (eos.empty() ? "" : ", ") + std::to_string(id);
    std::printf("# sampling defaults for unset request fields: %s (%s); EOS ids: %s\n",
                describe(generation.sampling).c_str(),
                !config.model.generation_config ? "model.generation_config = \"none\""
                : generation.found              ? "generation_config.json"
                                                : "no generation_config.json",
                eos.empty() ? "none" : eos.c_str());
    std::string names;
    for (const std::string& n : unused) names += (names.empty() ? "" : ", ") + n;
    std::printf("# unused checkpoint tensors: %zu%s%s\n", unused.size(), unused.empty() ? "" : ": ",
                names.c_str());
  });
}

}  // namespace minivllm::cli
