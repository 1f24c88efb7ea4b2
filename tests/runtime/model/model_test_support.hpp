#pragma once
// Shared by the model tests: random-v1 checkpoints of the tiny configs, the built plugins, and a
// trivial block allocator.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/random_model.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

namespace minivllm::testing {

// The build's plugins folder (tests/meson.build sets MINIVLLM_PLUGIN_DIR).
inline std::filesystem::path plugin_dir() { return env_path("MINIVLLM_PLUGIN_DIR"); }

// configs/models/<name>.json as a random-v1 checkpoint (seed 0) in dir/<name>, with the real
// tokenizer files of its family beside it, as a downloaded model folder would have them.
inline std::filesystem::path make_tiny_checkpoint(const std::filesystem::path& dir,
                                                  const std::string& name,
                                                  const std::string& tokenizer_family) {
  const auto out = dir / name;
  write_random_model(PluginRegistry::load({plugin_dir()}), configs_dir() / "models" / (name + ".json"),
                     out, 0);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(user_data_dir() / "tokenizers" / tokenizer_family / file, out / file);
  return out;
}

// Sets config.json's `field` to `json_value` (JSON text; "null" clears it) in a model folder.
inline void set_config_field(const std::filesystem::path& model_dir, const std::string& field,
                             const std::string& json_value) {
  const auto file = model_dir / "config.json";
  nlohmann::json config = nlohmann::json::parse(std::ifstream(file));
  config[field] = nlohmann::json::parse(json_value);
  std::ofstream(file) << config.dump(2);
}

// Hands out block ids from the top of the cache down, so that sequences' blocks are neither
// contiguous nor in order: the paged cache must follow the block tables.
class BlockAllocator {
 public:
  explicit BlockAllocator(std::int64_t num_blocks) : next_(num_blocks - 1) {}
  std::vector<std::int32_t> take(std::int64_t count) {
    std::vector<std::int32_t> blocks;
    for (std::int64_t i = 0; i < count; ++i) {
      if (next_ < 0) throw std::runtime_error("test KV cache out of blocks");
      blocks.push_back(static_cast<std::int32_t>(next_--));
    }
    return blocks;
  }

 private:
  std::int64_t next_;
};

}  // namespace minivllm::testing
