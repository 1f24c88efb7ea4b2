#include "cli/config_options.hpp"

#include <filesystem>
#include <system_error>

#include <CLI/CLI.hpp>

namespace minivllm::cli {

namespace fs = std::filesystem;

void with_default_plugin_dirs(Config& config) {
  if (!config.runtime.plugin_dirs.empty()) return;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return;
  // MINIVLLM_INSTALLED_PLUGIN_DIR: <libdir>/minivllm/plugins relative to <bindir> (meson).
  for (const fs::path& dir : {exe.parent_path() / MINIVLLM_INSTALLED_PLUGIN_DIR,
                              exe.parent_path() / "plugins"}) {
    if (fs::is_directory(dir, ec)) {
      config.runtime.plugin_dirs.push_back(fs::weakly_canonical(dir, ec));
      return;
    }
  }
}

Config ConfigOptions::load() const {
  Config config = load_config(file, overrides);
  with_default_plugin_dirs(config);
  return config;
}

void ConfigOptions::add_to(CLI::App& command) {
  command.add_option("--config,-c", file, "TOML configuration file (configs/*.toml)");
  command.add_option("--set", overrides,
                     "override a key: section.key=value (TOML literal; repeatable)")
      ->take_all()
      ->expected(1);
}

}  // namespace minivllm::cli
