#pragma once
// A model folder's generation_config.json (Hugging Face's generation defaults): the sampling
// defaults for the fields a request leaves unset, and the EOS ids, as vLLM reads them.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <minivllm/sampling_params.hpp>

namespace minivllm {

struct GenerationConfig {
  bool found = false;  // the folder has the file
  SamplingDefaults sampling;
  std::vector<std::int64_t> eos_token_ids;  // empty: config.json's
};

// <model_dir>/generation_config.json, or an empty GenerationConfig when it is absent. Throws
// minivllm::Error naming the file and the field for bad JSON or a value out of range.
GenerationConfig load_generation_config(const std::filesystem::path& model_dir);

// "temperature 0.6, top_p 0.95, top_k 20" (only the fields it sets), or "none".
std::string describe(const SamplingDefaults& defaults);

}  // namespace minivllm
