#pragma once
// config.json read as ConfigFields (the plugins' view of a model config), over nlohmann::json.
#include <filesystem>
#include <memory>
#include <string>

#include <minivllm/config_fields.hpp>

namespace minivllm {

// Parses `json_text` (a JSON object); `origin` names it in errors. Throws minivllm::Error.
std::unique_ptr<ConfigFields> parse_config_fields(const std::string& json_text,
                                                  const std::string& origin);
// Reads and parses the file; errors name it.
std::unique_ptr<ConfigFields> load_config_fields(const std::filesystem::path& config_json);

}  // namespace minivllm
