#pragma once
// The paged KV cache as a model sees it: per layer a key and a value tensor of
// [num_blocks, block_size, num_kv_heads, head_dim]; slot s is row s of the flattened first two
// dimensions. Blocks are handed out by the engine's block manager; the model only reads and writes
// through a Batch's block tables and slot mapping.
#include <cstdint>
#include <vector>

#include <minivllm/tensor.hpp>

namespace minivllm {

// What a model needs cached per token (num_kv_heads is this rank's share under tensor parallelism).
struct KvCacheSpec {
  std::int64_t num_layers = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
};

struct KvCacheView {
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;
  std::vector<Tensor> keys;    // [num_layers]
  std::vector<Tensor> values;  // [num_layers]
};

}  // namespace minivllm
