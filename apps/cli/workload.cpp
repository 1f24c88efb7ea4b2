#include "cli/workload.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

namespace minivllm::cli {

Workload read_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--workload " + path + ": cannot open");
  try {
    const nlohmann::json file = nlohmann::json::parse(in);
    Workload w;
    w.name = file.at("name").get<std::string>();
    SamplingParams params;
    params.temperature = file.at("temperature").get<double>();
    params.ignore_eos = file.at("ignore_eos").get<bool>();
    for (const nlohmann::json& r : file.at("requests")) {
      GenerateRequest& req = w.requests.emplace_back();
      req.prompt_token_ids = r.at("prompt_token_ids").get<std::vector<std::int32_t>>();
      req.params = params;
      req.params.max_tokens = r.at("max_tokens").get<int>();
      w.prompt_tokens += static_cast<std::int64_t>(req.prompt_token_ids.size());
    }
    return w;
  } catch (const nlohmann::json::exception& e) {
    throw Error("--workload " + path + ": " + e.what());
  }
}

}  // namespace minivllm::cli
