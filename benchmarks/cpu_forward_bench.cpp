// CPU reference backend speed on the tiny models: prefill (one 256-token prompt, logits of the
// last token) and decode (one sequence, single-token steps after a 16-token prompt), in tokens/s.
// Checkpoints are random-v1 (seed 0) written to a temporary folder. Prints a table and one JSON
// line. Not run by the tests.
//   cpu_forward_bench [PLUGIN_DIR] [CONFIGS_DIR]   (defaults: this build's plugins and the
//   source tree's configs/)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "backend/cpu_ops.hpp"
#include "model/random_model.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"

namespace {

namespace fs = std::filesystem;
using namespace minivllm;
using Clock = std::chrono::steady_clock;

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kPrefillTokens = 256;
constexpr std::int32_t kDecodePrompt = 16;
constexpr std::int32_t kDecodeSteps = 64;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::int32_t> block_table(std::int32_t tokens) {
  std::vector<std::int32_t> table((tokens + kBlockSize - 1) / kBlockSize);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<std::int32_t>(i);
  return table;
}

struct Speed {
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

Speed measure(Model& model, Ops& ops, std::int64_t vocab) {
  Speed speed;
  const auto table = block_table(kPrefillTokens + kDecodeSteps);
  auto kv = allocate_kv_cache(ops, model.kv_cache_spec(), static_cast<std::int64_t>(table.size()),
                              kBlockSize);
  std::vector<std::int32_t> prompt(kPrefillTokens);
  for (std::int32_t i = 0; i < kPrefillTokens; ++i) prompt[i] = (i * 7919) % static_cast<std::int32_t>(vocab);

  BatchBuilder builder(kBlockSize);
  builder.add(prompt, 0, table);
  const Batch prefill = builder.build();
  auto start = Clock::now();
  model.forward(prefill, kv);
  speed.prefill_tokens_per_s = kPrefillTokens / seconds_since(start);

  std::int32_t cached = kDecodePrompt;  // decode after a short prompt (its K/V is already there)
  start = Clock::now();
  for (std::int32_t step = 0; step < kDecodeSteps; ++step) {
    const std::int32_t token = prompt[static_cast<std::size_t>(step)];
    builder.add(std::span(&token, 1), cached++, table);
    model.forward(builder.build(), kv);
  }
  speed.decode_tokens_per_s = kDecodeSteps / seconds_since(start);
  return speed;
}

}  // namespace

int main(int argc, char** argv) try {
  const fs::path plugin_dir = argc > 1 ? argv[1] : MINIVLLM_BUILD_PLUGIN_DIR;
  const fs::path configs = argc > 2 ? argv[2] : MINIVLLM_SOURCE_CONFIGS_DIR;
  const fs::path work = fs::temp_directory_path() / ("mv_cpu_bench_" + std::to_string(getpid()));
  const auto plugins = PluginRegistry::load({plugin_dir});
  CpuOps ops;
  std::string json = "{";
  std::printf("%-12s %18s %18s\n", "model", "prefill tokens/s", "decode tokens/s");
  for (const std::string name : {"tiny-qwen3", "tiny-llama3"}) {
    write_random_model(plugins, configs / "models" / (name + ".json"), work / name, 0);
    auto loaded = load_model(plugins, work / name, ops);
    const Speed s = measure(*loaded.model, ops, loaded.config.vocab_size);
    std::printf("%-12s %18.0f %18.0f\n", name.c_str(), s.prefill_tokens_per_s, s.decode_tokens_per_s);
    json += (json.size() > 1 ? ", " : "") + ("\"" + name + "\": {\"prefill_tokens_per_s\": " +
            std::to_string(s.prefill_tokens_per_s) + ", \"decode_tokens_per_s\": " +
            std::to_string(s.decode_tokens_per_s) + "}");
  }
  fs::remove_all(work);
  std::printf("%s}\n", json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cpu_forward_bench: %s\n", e.what());
  return 1;
}
