#include "cli/bench_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include <minivllm/error.hpp>

#include "backend/make_ops.hpp"

namespace minivllm::cli {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// MINIVLLM_COMMIT when set (scripts/gpu/bundle.sh records it for the GPU machine, whose copy of
// the tree has no usable git history), else git in the folder of this executable (a build
// folder sits in its checkout).
std::string commit() {
  if (const char* given = std::getenv("MINIVLLM_COMMIT"); given && *given) return given;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  const std::string command =
      "git -C '" + exe.parent_path().string() + "' describe --always --dirty 2>/dev/null";
  const std::unique_ptr<FILE, int (*)(FILE*)> out(popen(command.c_str(), "r"), pclose);
  if (!out) return "unknown";
  char line[128] = {};
  if (!std::fgets(line, sizeof line, out.get())) return "unknown";
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "unknown" : text;
}

// The GPU's name on the cuda backend, else the backend's.
std::string device_name(const Config& config) {
  if (config.runtime.backend == Backend::cuda) return cuda_device_name();
  return std::string(backend_name(config.runtime.backend));
}

}  // namespace

nlohmann::json bench_run_info() { return {{"date", utc_now()}, {"commit", commit()}}; }

nlohmann::json bench_run_info(const Config& config) {
  nlohmann::json info = bench_run_info();
  info.update({{"device", device_name(config)}, {"config", to_toml(config)}});
  return info;
}

void write_bench_json(const nlohmann::json& result, const std::string& path,
                      const std::string& option) {
  std::ofstream out(path);
  if (!(out << result.dump(2) << '\n')) throw Error(option + " " + path + ": cannot write");
}

}  // namespace minivllm::cli
