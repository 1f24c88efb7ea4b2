#pragma once
// What every `minivllm bench` result file records besides its figures, and writing it.
#include <string>

#include <nlohmann/json.hpp>

#include <minivllm/config.hpp>

namespace minivllm::cli {

// {"date": UTC ISO 8601, "device": the config's backend, "commit": the checkout the binary was
// built in (git describe --always --dirty; "unknown" outside a git checkout), "config": TOML}.
nlohmann::json bench_run_info(const Config& config);
// {"date", "commit"}: for a bench of a server whose configuration is its own.
nlohmann::json bench_run_info();

// Writes `result` (indented) to `path`; throws minivllm::Error naming `option` when it cannot.
void write_bench_json(const nlohmann::json& result, const std::string& path,
                      const std::string& option);

}  // namespace minivllm::cli
