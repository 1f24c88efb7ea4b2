// The launch configuration: TOML text and `--set` overrides through parse_config, the code
// load_config runs, with toml++ compiled from its headers with asserts and UBSan on. The input is
// the file's text, then after each NUL byte one --set value ("section.key=value").
// A configuration that loads must print (to_toml) as TOML that loads back to the same values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/error.hpp>

#include <minivllm/config.hpp>

namespace {

using minivllm::Config;

#define FUZZ_CHECK(cond)       \
  do {                         \
    if (!(cond)) __builtin_trap(); \
  } while (0)

void expect_same(const Config& a, const Config& b) {
  FUZZ_CHECK(a.model.path == b.model.path);
  FUZZ_CHECK(a.model.dtype == b.model.dtype);
  FUZZ_CHECK(a.model.max_model_len == b.model.max_model_len);
  FUZZ_CHECK(a.model.generation_config == b.model.generation_config);
  FUZZ_CHECK(a.runtime.backend == b.runtime.backend);
  FUZZ_CHECK(a.runtime.plugin_dirs == b.runtime.plugin_dirs);
  FUZZ_CHECK(a.runtime.log_level == b.runtime.log_level);
  FUZZ_CHECK(a.runtime.cuda_graphs == b.runtime.cuda_graphs);
  FUZZ_CHECK(a.runtime.cuda_graph_max_prefill_tokens == b.runtime.cuda_graph_max_prefill_tokens);
  FUZZ_CHECK(a.runtime.step_timeout_s == b.runtime.step_timeout_s);
  FUZZ_CHECK(a.cache.block_size == b.cache.block_size);
  FUZZ_CHECK(a.cache.kv_cache_dtype == b.cache.kv_cache_dtype);
  FUZZ_CHECK(a.cache.num_blocks == b.cache.num_blocks);
  FUZZ_CHECK(a.cache.gpu_memory_utilization == b.cache.gpu_memory_utilization);
  FUZZ_CHECK(a.cache.enable_prefix_caching == b.cache.enable_prefix_caching);
  FUZZ_CHECK(a.scheduler.max_num_seqs == b.scheduler.max_num_seqs);
  FUZZ_CHECK(a.scheduler.max_num_batched_tokens == b.scheduler.max_num_batched_tokens);
  FUZZ_CHECK(a.scheduler.enable_chunked_prefill == b.scheduler.enable_chunked_prefill);
  FUZZ_CHECK(a.parallel.tensor_parallel_size == b.parallel.tensor_parallel_size);
  FUZZ_CHECK(a.parallel.data_parallel_size == b.parallel.data_parallel_size);
  FUZZ_CHECK(a.parallel.devices == b.parallel.devices);
  FUZZ_CHECK(a.parallel.remote_workers == b.parallel.remote_workers);
  FUZZ_CHECK(a.parallel.listen == b.parallel.listen);
  FUZZ_CHECK(a.parallel.join_token_file == b.parallel.join_token_file);
  FUZZ_CHECK(a.parallel.join_timeout_s == b.parallel.join_timeout_s);
  FUZZ_CHECK(a.server.max_body_bytes == b.server.max_body_bytes);
  FUZZ_CHECK(a.server.max_header_bytes == b.server.max_header_bytes);
  FUZZ_CHECK(a.server.max_headers == b.server.max_headers);
  FUZZ_CHECK(a.server.header_timeout_s == b.server.header_timeout_s);
  FUZZ_CHECK(a.server.max_waiting == b.server.max_waiting);
  FUZZ_CHECK(a.server.max_n == b.server.max_n);
  FUZZ_CHECK(a.server.max_logprobs == b.server.max_logprobs);
  FUZZ_CHECK(a.server.max_stop == b.server.max_stop);
  FUZZ_CHECK(a.server.max_stop_bytes == b.server.max_stop_bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  std::vector<std::string> sets;
  while (nul != std::string_view::npos) {
    const std::size_t next = input.find('\0', nul + 1);
    sets.emplace_back(input.substr(nul + 1, next == std::string_view::npos ? next : next - nul - 1));
    nul = next;
  }
  Config config;
  try {
    config = minivllm::parse_config(text, "fuzz.toml", "/fuzz", sets);
  } catch (const minivllm::Error&) {
    return 0;  // a clear error is the expected outcome for most inputs
  }
  const std::string printed = minivllm::to_toml(config);
  Config again;
  try {
    again = minivllm::parse_config(printed, "printed.toml", "/", {});
  } catch (const minivllm::Error&) {
    __builtin_trap();  // what to_toml prints must load
  }
  expect_same(config, again);
  return 0;
}
