// `minivllm tokenize` / `minivllm detokenize`: JSON on stdout, clear errors on stderr with a
// non-zero exit status.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "test_paths.hpp"

namespace minivllm {
namespace {

struct CommandResult {
  int status = 0;
  std::string output;  // stdout and stderr together
};

// Runs minivllm with `args` (already shell-quoted).
CommandResult minivllm(const std::string& args) {
  const std::string command = testing::minivllm_bin().string() + " " + args + " 2>&1";
  CommandResult run;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) run.output += buf;
  run.status = ::pclose(p);
  return run;
}

std::string model(const char* family) {
  return "--model '" + (testing::user_data_dir() / "tokenizers" / family).string() + "'";
}

TEST(CmdTokenize, PrintsIds) {
  const CommandResult r = minivllm("tokenize " + model("qwen3") + " --text 'Hello, world!'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "{\"ids\":[9707,11,1879,0]}\n");
}

TEST(CmdTokenize, NoSpecialStillRecognisesSpecialTokensInTheText) {
  const CommandResult r =
      minivllm("tokenize " + model("llama3") + " --text '<|begin_of_text|>Hi' --no-special");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "{\"ids\":[128000,13347]}\n");
}

TEST(CmdDetokenize, PrintsTextWithOrWithoutSpecialTokens) {
  CommandResult r = minivllm("detokenize " + model("qwen3") + " --ids '9707, 11,1879,0,151645'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "{\"text\":\"Hello, world!<|im_end|>\"}\n");
  r = minivllm("detokenize " + model("qwen3") + " --ids 9707,151645 --skip-special");
  EXPECT_EQ(r.output, "{\"text\":\"Hello\"}\n");
}

TEST(CmdTokenize, ReportsBadInput) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"tokenize " + model("qwen3") + " --text ''", "the text to encode is empty"},
      {"tokenize " + model("qwen3") + " --text \"$(printf 'ab\\377')\"",
       "not valid UTF-8 (byte 2 of 3)"},
      {"detokenize " + model("qwen3") + " --ids 1,999999",
       "token id 999999 at position 1 is outside the vocabulary"},
      {"detokenize " + model("qwen3") + " --ids 1,x", "--ids '1,x': entry 1 ('x') is not a token id"},
      {"tokenize --model /nonexistent --text hi", "cannot open /nonexistent/tokenizer.json"},
  };
  for (const auto& c : cases) {
    const CommandResult r = minivllm(c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace minivllm
