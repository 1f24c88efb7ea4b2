#pragma once
// Token ids given on the command line as "1,2, 3".
#include <cstdint>
#include <string>
#include <vector>

namespace minivllm::cli {

// "1,2, 3" -> {1, 2, 3}. Throws minivllm::Error naming `option` and the bad entry.
std::vector<std::int32_t> parse_token_id_list(const std::string& list, const std::string& option);

}  // namespace minivllm::cli
