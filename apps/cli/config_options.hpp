#pragma once
// --config FILE and --set section.key=value, shared by every subcommand that launches the runtime.
#include <string>
#include <vector>

#include <minivllm/config.hpp>

namespace CLI {
class App;
}

namespace minivllm::cli {

// An empty runtime.plugin_dirs becomes the plugins beside this executable: an installed
// minivllm's <libdir>/minivllm/plugins, or a build tree's plugins/ folder (whichever exists).
void with_default_plugin_dirs(Config& config);

struct ConfigOptions {
  std::string file;
  std::vector<std::string> overrides;

  void add_to(CLI::App& command);
  // The configuration, plugin dirs defaulted as above.
  Config load() const;
};

}  // namespace minivllm::cli
