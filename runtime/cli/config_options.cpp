#include "cli/config_options.hpp"

#include <CLI/CLI.hpp>

namespace minivllm::cli {

void ConfigOptions::add_to(CLI::App& command) {
  command.add_option("--config,-c", file, "TOML configuration file (configs/*.toml)");
  command.add_option("--set", overrides,
                     "override a key: section.key=value (TOML literal; repeatable)")
      ->take_all()
      ->expected(1);
}

}  // namespace minivllm::cli
