#pragma once
// A benchmark workload file (benchmarks/throughput-256.json's format):
//   {"name", "temperature", "ignore_eos", "requests": [{"prompt_token_ids": [...], "max_tokens"}]}
#include <cstdint>
#include <string>
#include <vector>

#include <minivllm/request.hpp>

namespace minivllm::cli {

struct Workload {
  std::string name;
  std::vector<GenerateRequest> requests;
  std::int64_t prompt_tokens = 0;
};

// Throws minivllm::Error naming the file and what is wrong.
Workload read_workload(const std::string& path);

}  // namespace minivllm::cli
