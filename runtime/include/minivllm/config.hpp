#pragma once
// The runtime's launch configuration: a TOML file plus `--set section.key=value` overrides.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/dtype.hpp>
#include <minivllm/model_config.hpp>

#include <minivllm/log_level.hpp>

namespace minivllm {

enum class Backend { cpu, cuda };

struct ModelOptions {
  std::filesystem::path path;         // Hugging Face model folder (required)
  DType dtype = DType::bf16;          // "bfloat16" | "float32"
  std::int64_t max_model_len = 0;     // 0: the model's max_position_embeddings
  // "auto": generation_config.json in the folder gives the sampling defaults and EOS ids;
  // "none": vLLM's defaults and config.json's EOS ids.
  bool generation_config = true;
};

struct RuntimeOptions {
  Backend backend = Backend::cpu;
  std::vector<std::filesystem::path> plugin_dirs;
  LogLevel log_level = LogLevel::info;
  bool cuda_graphs = true;  // replay pure-decode and small prefill steps as CUDA graphs (cuda)
  std::int64_t cuda_graph_max_prefill_tokens = 512;  // the largest prefill step replayed; 0: none
  std::int64_t step_timeout_s = 120;  // a step not answered by then fails its requests
};

// What the KV cache stores: the model's compute dtype ("auto"), or e4m3 codes with a scale per
// token and head (kv_cache.hpp).
enum class KvCacheDtype : std::uint8_t { auto_dtype, fp8_e4m3 };

struct CacheOptions {
  std::int64_t block_size = 16;             // tokens per KV-cache block
  KvCacheDtype kv_cache_dtype = KvCacheDtype::auto_dtype;  // "auto" | "fp8_e4m3"
  std::int64_t num_blocks = 0;              // 0: size from gpu_memory_utilization
  double gpu_memory_utilization = 0.9;      // fraction of device memory the engine may use
  bool enable_prefix_caching = true;
};

struct SchedulerOptions {
  std::int64_t max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  bool enable_chunked_prefill = true;
};

struct ParallelOptions {
  std::int64_t tensor_parallel_size = 1;
  // Replicas of the model, each with its own scheduler, KV cache and tensor-parallel ranks.
  std::int64_t data_parallel_size = 1;
  // CUDA device indices, one worker each (tensor_parallel_size x data_parallel_size of them,
  // replica by replica); unset, 0 .. N*M-1. On the cpu backend [0]: every rank is a thread on
  // the host.
  std::vector<std::int64_t> devices;
  // Ranks run by `minivllm worker` processes that join this engine (the last ones, in join
  // order); this process runs the others, on `devices`.
  std::int64_t remote_workers = 0;
  std::string listen;                      // "HOST:PORT" the workers connect to (HOST: loopback)
  std::filesystem::path join_token_file;   // the secret a worker must prove
  std::int64_t join_timeout_s = 120;       // for the workers to join at start-up
};

// `minivllm serve`'s limits on what one client may send or ask for.
struct ServerOptions {
  std::int64_t max_body_bytes = 8 << 20;    // a larger body is answered 413
  std::int64_t max_header_bytes = 16 << 10;  // the request line and headers together (431)
  std::int64_t max_headers = 100;            // header fields (431)
  std::int64_t header_timeout_s = 10;        // to send the whole request (headers and body)
  std::int64_t max_waiting = 0;              // requests beyond the running ones; 0: 4 x max_num_seqs
  std::int64_t max_n = 16;                   // completions per request
  std::int64_t max_logprobs = 20;            // top logprobs per token
  std::int64_t max_stop = 16;                // stop strings per request
  std::int64_t max_stop_bytes = 256;         // bytes per stop string
};

struct Config {
  ModelOptions model;
  RuntimeOptions runtime;
  CacheOptions cache;
  SchedulerOptions scheduler;
  ParallelOptions parallel;
  ServerOptions server;
};

// Reads `file` (empty path: defaults only), then applies `overrides` ("section.key=value", the
// value a TOML literal; a bare word is taken as a string). Relative paths in the file are
// relative to the file's folder; relative paths given with --set, to the working directory.
// Every problem (unknown section or key, wrong type, value out of range, TOML syntax, missing
// model.path) is collected and thrown as one minivllm::Error naming the file (or --set), line,
// key and what was expected: no Config comes back half-read.
Config load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides);

// The same from TOML text already in memory (load_config reads the file and calls this; the
// fuzzer calls it directly): `name` stands for the file in errors, relative paths in the text
// resolve against `base_dir`. Reads no file.
Config parse_config(std::string_view toml_text, const std::string& name,
                    const std::filesystem::path& base_dir, const std::vector<std::string>& overrides);

// The defaults with `overrides` applied, model.path optional: for commands that load no model.
Config load_overrides(const std::vector<std::string>& overrides);

// model.max_model_len against the model: its max_position_embeddings when 0; an error naming the
// key and the limit when above it (RoPE was not trained past it, and nothing here extends it).
std::int64_t resolve_max_model_len(const Config& config, const ModelConfig& model);

// The resolved configuration as TOML text (paths absolute), for logs and `minivllm info`.
std::string to_toml(const Config& config);

std::string_view backend_name(Backend b);

// "HOST:PORT" (HOST may be empty: 127.0.0.1; "[::1]:PORT" for IPv6) as its parts. Throws
// minivllm::Error naming `what` (the key or option it came from).
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
HostPort parse_host_port(const std::string& text, const std::string& what);

// The secret in a join token file (parallel.join_token_file, `minivllm worker --token-file`),
// without a trailing newline. Throws minivllm::Error naming the file when it cannot be read or
// holds fewer than 16 bytes.
std::string read_join_token(const std::filesystem::path& file);

}  // namespace minivllm
