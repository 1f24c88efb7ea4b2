#pragma once
// The minivllm subcommands, one file each (cmd_<name>.cpp). Each adds itself to the app and
// sets a callback that runs it; errors are thrown as minivllm::Error and printed by main.
namespace CLI {
class App;
}

namespace minivllm::cli {

void add_checkpoint_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_tokenize_commands(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_worker_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_bench_latency_command(CLI::App& bench);  // under `bench`
void add_bench_serve_command(CLI::App& bench);    // under `bench`

}  // namespace minivllm::cli
