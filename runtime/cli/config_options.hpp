#pragma once
// --config FILE and --set section.key=value, shared by every subcommand that launches the runtime.
#include <string>
#include <vector>

#include "config/config.hpp"

namespace CLI {
class App;
}

namespace minivllm::cli {

struct ConfigOptions {
  std::string file;
  std::vector<std::string> overrides;

  void add_to(CLI::App& command);
  Config load() const { return load_config(file, overrides); }
};

}  // namespace minivllm::cli
