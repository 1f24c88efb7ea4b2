#include "cli/token_id_list.hpp"

#include <charconv>
#include <string_view>

#include <minivllm/error.hpp>

namespace minivllm::cli {

std::vector<std::int32_t> parse_token_id_list(const std::string& list, const std::string& option) {
  std::vector<std::int32_t> ids;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    std::string_view item(list.data() + start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    std::int32_t id = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw Error(option + " '" + list + "': entry " + std::to_string(ids.size()) + " ('" +
                  std::string(item) +
                  "') is not a token id; expected a comma-separated list such as 1,2,3");
    ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

}  // namespace minivllm::cli
