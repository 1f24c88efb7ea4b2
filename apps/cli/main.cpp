// minivllm: the launcher. Subcommands live in cmd_*.cpp.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"minivllm: LLM inference runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "minivllm 0.1.0");
  minivllm::cli::add_checkpoint_command(app);
  minivllm::cli::add_info_command(app);
  minivllm::cli::add_tokenize_commands(app);
  minivllm::cli::add_generate_command(app);
  minivllm::cli::add_serve_command(app);
  minivllm::cli::add_worker_command(app);
  minivllm::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minivllm: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
