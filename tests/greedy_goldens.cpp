#include "greedy_goldens.hpp"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"

namespace minivllm::testing {

std::vector<std::int32_t> GreedyGolden::reliable_tokens(double tolerance) const {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < tokens.size() && margins.at(i) >= tolerance; ++i)
    out.push_back(tokens[i]);
  return out;
}

std::vector<GreedyGolden> load_greedy_goldens(const std::string& model) {
  using nlohmann::json;
  const auto path = test_data_dir() / "golden" / (model + ".json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  const json golden = json::parse(in);
  std::vector<GreedyGolden> out;
  for (const json& g : golden.at("greedy"))
    out.push_back({g.at("prompt").get<int>(), g.at("ids").get<std::vector<std::int32_t>>(),
                   g.at("new_ids").get<std::vector<std::int32_t>>(),
                   g.at("margins").get<std::vector<double>>()});
  return out;
}

}  // namespace minivllm::testing
