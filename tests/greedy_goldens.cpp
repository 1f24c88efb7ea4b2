#include "greedy_goldens.hpp"

#include <algorithm>
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
  for (const json& g : golden.at("greedy")) {
    GreedyGolden e{g.at("prompt").get<int>(), g.at("ids").get<std::vector<std::int32_t>>(), {}, {}};
    if (std::find(e.prompt.begin(), e.prompt.end(), 0) == e.prompt.end()) {
      e.tokens = g.at("new_ids").get<std::vector<std::int32_t>>();
      e.margins = g.at("margins").get<std::vector<double>>();
    } else {
      for (const json& f : golden.at("forward"))
        if (f.at("ids") == g.at("ids")) {
          const json& top = f.at("top_logits").back();
          e.tokens = {f.at("top_ids").back()[0].get<std::int32_t>()};
          e.margins = {top[0].get<double>() - top[1].get<double>()};
        }
      if (e.tokens.empty())
        throw std::runtime_error(path.string() + ": greedy prompt " + std::to_string(e.prompt_index) +
                                 " holds token 0 and has no forward golden");
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace minivllm::testing
