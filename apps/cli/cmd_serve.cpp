// minivllm serve: the OpenAI-compatible HTTP server (apps/server).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/config_options.hpp"
#include "server/serve.hpp"

namespace minivllm::cli {
namespace {

struct ServeCommand {
  ConfigOptions config;
  server::ServeOptions options;
};

}  // namespace

void add_serve_command(CLI::App& app) {
  auto cmd = std::make_shared<ServeCommand>();
  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the model over an OpenAI-compatible HTTP API (/v1/completions, "
               "/v1/chat/completions, /metrics, a chat page at /)");
  cmd->config.add_to(*serve);
  serve->add_option("--host", cmd->options.host, "Address to listen on (an IP address)")
      ->capture_default_str();
  serve->add_option("--port", cmd->options.port, "Port to listen on; 0 picks a free one")
      ->capture_default_str();
  serve->add_option("--api-key", cmd->options.api_key,
                    "Require Authorization: Bearer KEY on every endpoint but /health "
                    "(default: $MINIVLLM_API_KEY, else none)");
  serve->add_option("--served-model-name", cmd->options.served_model_name,
                    "The model's name in the API (default: the model folder's name)");
  // A non-zero status (the engine stopped on its own) leaves main through CLI11's silent
  // RuntimeError: the server has logged why.
  serve->callback([cmd] {
    if (const int status = server::serve(cmd->config.load(), cmd->options); status != 0)
      throw CLI::RuntimeError(status);
  });
}

}  // namespace minivllm::cli
