// random-v1 checkpoints written by `minivllm checkpoint` are byte-identical to the reference
// generator: their sha256 sums are in tests/data/checksums.txt. The tensors come from the
// config's plugin; tiny-qwen2's plugin is built out of tree, so its sum is checked by the SDK
// install test (tests/install).
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "temp_dir.hpp"
#include "test_paths.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;
using minivllm::testing::TempDir;

struct ChecksumCase {
  std::string sha256;
  std::string config;
  std::uint64_t seed = 0;
};

std::vector<ChecksumCase> read_checksums() {
  std::ifstream in(minivllm::testing::test_data_dir() / "checksums.txt");
  std::vector<ChecksumCase> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    ChecksumCase c;
    std::string seed;
    fields >> c.sha256 >> c.config >> seed;
    if (seed.rfind("seed=", 0) == 0) c.seed = std::stoull(seed.substr(5));
    cases.push_back(c);
  }
  return cases;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int status = ::pclose(p);
  return status == 0 ? out : "exit status " + std::to_string(status) + ": " + out;
}

TEST(RandomCheckpoint, TheInTreeModelsReferenceChecksums) {
  std::vector<ChecksumCase> cases = read_checksums();
  ASSERT_EQ(cases.size(), 7u);
  for (const ChecksumCase& c : cases) {
    if (c.config == "tiny-qwen2") continue;  // out-of-tree plugin: tests/install
    SCOPED_TRACE(c.config + " seed " + std::to_string(c.seed));
    TempDir dir("rv1");
    fs::path config = minivllm::testing::configs_dir() / "models" / (c.config + ".json");
    fs::path out = dir / "model";
    std::string log = run(minivllm::testing::minivllm_bin().string() + " checkpoint --hf-config " +
                          config.string() + " --out " + out.string() + " --seed " +
                          std::to_string(c.seed) + " 2>&1");
    ASSERT_NE(log.find("wrote "), std::string::npos) << log;
    std::string sum = run("sha256sum " + (out / "model.safetensors").string());
    EXPECT_EQ(sum.substr(0, 64), c.sha256);
    // config.json is a byte copy of the input.
    std::ifstream a(config), b(out / "config.json");
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    EXPECT_EQ(sa.str(), sb.str());
  }
}

TEST(RandomCheckpoint, TensorListComesFromThePlugin) {
  TempDir dir("rv1_list");
  const std::string bin = minivllm::testing::minivllm_bin().string();
  const fs::path qwen = minivllm::testing::configs_dir() / "models/tiny-qwen3.json";
  // tied: no lm_head; q/k norms per layer
  EXPECT_NE(run(bin + " checkpoint --hf-config " + qwen.string() + " --out " +
                (dir / "q").string()).find("wrote 24 tensors"), std::string::npos);
  const fs::path llama = minivllm::testing::configs_dir() / "models/tiny-llama3.json";
  EXPECT_NE(run(bin + " checkpoint --hf-config " + llama.string() + " --out " +
                (dir / "l").string()).find("wrote 21 tensors"), std::string::npos);  // lm_head
  // No plugin for the architecture, and a model_type the plugin does not take.
  std::ifstream in(llama);
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const fs::path mistral = dir / "mistral.json";
  std::ofstream(mistral) << std::string(config).replace(config.find("\"llama\""), 7, "\"mistral\"");
  std::string log = run(bin + " checkpoint --hf-config " + mistral.string() + " --out " +
                        (dir / "m").string() + " 2>&1");
  EXPECT_NE(log.find("field 'model_type': 'mistral' is not one the plugin for LlamaForCausalLM"),
            std::string::npos) << log;
  log = run(bin + " checkpoint --hf-config " + llama.string() + " --out " + (dir / "m").string() +
            " --set 'runtime.plugin_dirs=[\"" + dir.path().string() + "\"]' 2>&1");
  EXPECT_NE(log.find("no plugin provides architecture LlamaForCausalLM"), std::string::npos) << log;
  log = run(bin + " checkpoint --hf-config " + llama.string() + " --out " + (dir / "m").string() +
            " --set model.dtype=float32 2>&1");
  EXPECT_NE(log.find("checkpoint takes only runtime.plugin_dirs"), std::string::npos) << log;
}

// The progress bar is drawn only on a terminal: `script` gives the command one.
TEST(RandomCheckpoint, ShowsProgressOnATerminalOnly) {
  TempDir dir("rv1_progress");
  const std::string command = minivllm::testing::minivllm_bin().string() + " checkpoint --hf-config " +
                              (minivllm::testing::configs_dir() / "models/tiny-qwen3.json").string() +
                              " --out " + (dir / "m").string();
  const std::string on_tty = run("script -qec '" + command + "' /dev/null");
  EXPECT_NE(on_tty.find("MB 100%"), std::string::npos) << on_tty;
  const std::string piped = run(command + " 2>&1");
  EXPECT_EQ(piped.find("MB 100%"), std::string::npos) << piped;
  EXPECT_NE(piped.find("wrote 24 tensors"), std::string::npos) << piped;
}

TEST(RandomCheckpoint, CommandErrors) {
  TempDir dir("rv1_err");
  std::string log = run(minivllm::testing::minivllm_bin().string() +
                        " checkpoint --hf-config " + (dir / "absent.json").string() + " --out " +
                        (dir / "m").string() + " 2>&1");
  EXPECT_NE(log.find("exit status"), std::string::npos) << log;
  EXPECT_NE(log.find("absent.json: cannot open"), std::string::npos) << log;
  fs::path config = minivllm::testing::configs_dir() / "models/tiny-qwen3.json";
  for (const char* seed : {"-1", "18446744073709551616", "0x10", "1e3", ""}) {
    log = run(minivllm::testing::minivllm_bin().string() + " checkpoint --hf-config " +
              config.string() + " --out " + (dir / "m").string() + " --seed '" + seed + "' 2>&1");
    EXPECT_NE(log.find("--seed: expected an unsigned 64-bit integer"), std::string::npos)
        << seed << ": " << log;
  }
  EXPECT_FALSE(fs::exists(dir / "m" / "model.safetensors"));
}

}  // namespace
}  // namespace minivllm
