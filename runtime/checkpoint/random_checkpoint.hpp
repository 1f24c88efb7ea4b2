#pragma once
// random-v1: deterministic pseudo-random weights with a model's real names and shapes, so tests
// and benchmarks run real architectures without downloaded weights. Byte-identical to the
// reference generator (tests/data/checksums.txt holds its sha256 sums).
//
// The rule, per tensor N of n elements, global seed S: seed = FNV-1a-64(N) ^ S; element i draws
// splitmix64(seed + (i+1) * golden ratio) >> 40, scaled to u in [0,1), v = 2u - 1 (double), then
// norms are 1 + 0.1 v, biases 0.1 v, embeddings and lm_head v, linears [out, in] sqrt(3 / in) v;
// rounded double -> float -> bf16 (nearest even). The file is safetensors with a compact header.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <minivllm/model.hpp>

#include "checkpoint/safetensors.hpp"

namespace minivllm {

// Writes out_dir/config.json (a byte copy of hf_config) and out_dir/model.safetensors holding
// `tensors` (the model family's ModelFamily::checkpoint_tensors, in file order) as BF16,
// creating out_dir if needed. Uses every hardware thread.
void write_random_checkpoint(const std::filesystem::path& hf_config,
                             const std::vector<CheckpointTensor>& tensors,
                             const std::filesystem::path& out_dir, std::uint64_t seed,
                             const WriteProgress& progress = {});

}  // namespace minivllm
