#pragma once
// Where tests find their files. meson test sets these variables (tests/meson.build); a test run
// by hand needs them exported.
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace minivllm::testing {

inline std::filesystem::path env_path(const char* var) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0')
    throw std::runtime_error(std::string(var) + " is not set: run the tests through 'meson test'");
  return v;
}

// Committed fixtures: golden/, checksums.txt.
inline std::filesystem::path test_data_dir() { return env_path("MINIVLLM_TEST_DATA"); }

// The set-up script's data folder: tokenizers/<family>/, models/<name>/.
inline std::filesystem::path user_data_dir() { return env_path("MINIVLLM_DATA"); }

// The built minivllm executable.
inline std::filesystem::path minivllm_bin() { return env_path("MINIVLLM_BIN"); }

// The project's configs/ folder (HF model configs under configs/models/).
inline std::filesystem::path configs_dir() { return test_data_dir() / ".." / ".." / "configs"; }

}  // namespace minivllm::testing
