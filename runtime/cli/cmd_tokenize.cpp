// minivllm tokenize / detokenize: text <-> token ids with a model folder's tokenizer.json and
// tokenizer_config.json, printed as one JSON object on stdout.
#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "cli/commands.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir, text;
  bool no_special = false;
};

struct DetokenizeOptions {
  std::string model_dir, ids;
  bool skip_special = false;
};

// "1,2, 3" -> {1, 2, 3}; names the bad entry otherwise.
std::vector<TokenId> parse_ids(const std::string& list) {
  std::vector<TokenId> ids;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string_view item(list.data() + start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    TokenId id = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw Error("--ids: entry " + std::to_string(ids.size()) + " ('" + std::string(item) +
                  "') is not a token id; expected a comma-separated list such as 1,2,3");
    ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  auto tok = std::make_shared<TokenizeOptions>();
  CLI::App* encode =
      app.add_subcommand("tokenize", "Print the token ids of a text as {\"ids\": [...]}");
  encode
      ->add_option("--model", tok->model_dir,
                   "Model folder with tokenizer.json and tokenizer_config.json")
      ->required();
  encode->add_option("--text", tok->text, "Text to tokenize (UTF-8, not empty)")->required();
  encode->add_flag(
      "--no-special", tok->no_special,
      "add_special_tokens=False: the post-processor adds nothing (special tokens written in "
      "the text are still recognised)");
  encode->callback([tok] {
    const Tokenizer tokenizer = Tokenizer::from_directory(tok->model_dir);
    const nlohmann::json out = {{"ids", tokenizer.encode(tok->text, !tok->no_special)}};
    std::printf("%s\n", out.dump().c_str());
  });

  auto detok = std::make_shared<DetokenizeOptions>();
  CLI::App* decode =
      app.add_subcommand("detokenize", "Print the text of token ids as {\"text\": \"...\"}");
  decode
      ->add_option("--model", detok->model_dir,
                   "Model folder with tokenizer.json and tokenizer_config.json")
      ->required();
  decode->add_option("--ids", detok->ids, "Comma-separated token ids, e.g. 1,2,3")->required();
  decode->add_flag("--skip-special", detok->skip_special, "Leave special tokens out of the text");
  decode->callback([detok] {
    const Tokenizer tokenizer = Tokenizer::from_directory(detok->model_dir);
    const nlohmann::json out = {
        {"text", tokenizer.decode(parse_ids(detok->ids), detok->skip_special)}};
    std::printf("%s\n", out.dump().c_str());
  });
}

}  // namespace minivllm::cli
