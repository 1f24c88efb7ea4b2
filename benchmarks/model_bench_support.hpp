#pragma once
// What the whole-model GPU benchmarks share: their arguments, cache block size and warm-up,
// batches of equal sequences on disjoint cache blocks, the decode batches whose cache fits, and
// the median of their timings.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "backend/cuda_ops.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"

namespace minivllm::bench {

// configs/qwen3-0.6b-h200.toml's block size, so that the figures are the engine's.
constexpr std::int32_t kBlockSize = 256;
// Untimed steps before the timed ones.
constexpr int kWarmup = 3;

struct ModelBenchArgs {
  const char* model_dir;
  const char* plugin_dir;
  std::int32_t context_len;
};

// `program MODEL_DIR PLUGIN_DIR [CONTEXT_LEN=1024]`, or the exit code after saying why not: 2 for
// a usage error, 0 when this process sees no CUDA device (skipped).
inline std::variant<ModelBenchArgs, int> model_bench_args(int argc, char** argv,
                                                          const char* program) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR PLUGIN_DIR [CONTEXT_LEN]\n", program);
    return 2;
  }
  if (!CudaOps::device_available()) {
    std::printf("%s: skipped, no CUDA device\n", program);
    return 0;
  }
  return ModelBenchArgs{argv[1], argv[2], argc > 3 ? std::stoi(argv[3]) : 1024};
}

// `seqs` sequences of `context` tokens, the last `new_tokens` of them new (the rest cached), each
// on blocks of its own; token ids spread over the vocabulary.
inline Batch uniform_batch(std::int32_t seqs, std::int32_t context, std::int32_t new_tokens,
                           std::int64_t vocab, std::int32_t block_size) {
  BatchBuilder builder(block_size);
  const std::int32_t blocks_per_seq = (context + block_size - 1) / block_size;
  std::vector<std::int32_t> table(blocks_per_seq), tokens(new_tokens);
  for (std::int32_t s = 0; s < seqs; ++s) {
    for (std::int32_t b = 0; b < blocks_per_seq; ++b) table[b] = s * blocks_per_seq + b;
    for (std::int32_t i = 0; i < new_tokens; ++i)
      tokens[i] = static_cast<std::int32_t>((s * 7919 + i * 104729) % vocab);
    builder.add(tokens, context - new_tokens, table);
  }
  return builder.build();
}

// Of the decode batch sizes `sizes`, those whose bf16 cache at `context` tokens a sequence fits
// in half the device's free memory (the other half for the benchmark's activations and graphs);
// prints the ones it leaves out, so that a long context runs what fits.
inline std::vector<std::int32_t> decode_sizes_that_fit(const char* program,
                                                       const std::vector<std::int32_t>& sizes,
                                                       std::int32_t context,
                                                       const KvCacheSpec& spec) {
  std::size_t free = 0, total = 0;
  MV_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const auto budget = static_cast<std::int64_t>(free / 2);
  const std::int64_t per_seq = (context + kBlockSize - 1) / kBlockSize *
                               kv_cache_bytes_per_block(spec, kBlockSize, DType::bf16);
  std::vector<std::int32_t> fit;
  for (const std::int32_t seqs : sizes) {
    if (seqs * per_seq <= budget) {
      fit.push_back(seqs);
    } else {
      std::printf("%s: decode batch %d at context %d left out: its cache (%.1f GB) exceeds half "
                  "the free GPU memory (%.1f GB)\n",
                  program, seqs, context, static_cast<double>(seqs * per_seq) / 1e9,
                  static_cast<double>(budget) / 1e9);
    }
  }
  return fit;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace minivllm::bench
