// minivllm tokenize / detokenize: text <-> token ids with a model folder's tokenizer.json and
// tokenizer_config.json, printed as one JSON object on stdout.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "cli/commands.hpp"
#include "cli/token_id_list.hpp"
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
        {"text", tokenizer.decode(parse_token_id_list(detok->ids, "--ids"), detok->skip_special)}};
    std::printf("%s\n", out.dump().c_str());
  });
}

}  // namespace minivllm::cli
