#include "model/kv_cache_alloc.hpp"

#include <algorithm>
#include <string>

#include <minivllm/error.hpp>

namespace minivllm {

KvCacheView allocate_kv_cache(Ops& ops, const KvCacheSpec& spec, std::int64_t num_blocks,
                              std::int64_t block_size, DType dtype) {
  if (num_blocks < 1 || block_size < 1)
    throw Error("KV cache needs at least one block of at least one token");
  const Shape shape{num_blocks, block_size, spec.num_kv_heads, spec.head_dim};
  // Zeroed so that a read of a never-written slot (a bug) is deterministic.
  KvCacheView kv{num_blocks, block_size, {}, {}};
  const auto layer_cache = [&] {
    if (dtype != DType::fp8_e4m3) return ops.zeros(shape, dtype);
    // The codes, then the scales (kv_cache.hpp), in one allocation.
    const std::int64_t num_slots = num_blocks * block_size;
    const std::int64_t bytes =
        kv_cache_scales_offset(num_slots, spec.num_kv_heads, spec.head_dim) +
        num_slots * spec.num_kv_heads;  // a byte of scale per token and head
    return ops.zeros({bytes}, DType::fp8_e4m3).view(DType::fp8_e4m3, shape);
  };
  for (std::int64_t l = 0; l < spec.num_layers; ++l) {
    kv.keys.push_back(layer_cache());
    kv.values.push_back(layer_cache());
  }
  return kv;
}

std::int64_t kv_cache_bytes_per_block(const KvCacheSpec& spec, std::int64_t block_size, DType dtype) {
  // fp8: a byte of scale per token and head beside the codes (kv_cache.hpp).
  const std::int64_t token_head_bytes =
      spec.head_dim * static_cast<std::int64_t>(dtype_size(dtype)) +
      (dtype == DType::fp8_e4m3 ? 1 : 0);
  return 2 * spec.num_layers * spec.num_kv_heads * block_size * token_head_bytes;
}

void check_kv_cache_fits(const KvCacheSpec& spec, std::int64_t block_size, DType dtype,
                         std::int64_t num_blocks, std::int64_t available_bytes,
                         const std::string& memory) {
  const std::int64_t per_block = kv_cache_bytes_per_block(spec, block_size, dtype);
  if (per_block < 1 || num_blocks <= available_bytes / per_block) return;
  constexpr double MiB = 1 << 20;
  throw Error("cache.num_blocks = " + std::to_string(num_blocks) + " needs " +
              std::to_string(static_cast<std::int64_t>(static_cast<double>(per_block) *
                                                       static_cast<double>(num_blocks) / MiB)) +
              " MiB for the KV cache, more than the " +
              std::to_string(static_cast<std::int64_t>(static_cast<double>(available_bytes) / MiB)) +
              " MiB of " + memory + "; at most " + std::to_string(available_bytes / per_block) +
              " blocks of " + std::to_string(per_block) + " bytes fit");
}

std::int64_t activation_reserve_bytes(const ModelConfig& model, std::int64_t max_num_batched_tokens,
                                      std::int64_t max_num_seqs) {
  constexpr std::int64_t f32 = 4;
  const std::int64_t qkv = (model.num_attention_heads + 2 * model.num_key_value_heads) * model.head_dim;
  const std::int64_t widest = std::max({model.hidden_size, qkv, 2 * model.intermediate_size});
  return max_num_batched_tokens * widest * f32 * kActivationBuffers +
         2 * max_num_seqs * model.vocab_size * f32;
}

std::int64_t kv_cache_blocks_for_memory(const KvCacheSpec& spec, std::int64_t block_size,
                                        DType dtype, std::int64_t free_bytes,
                                        double gpu_memory_utilization, std::int64_t reserve_bytes,
                                        std::int64_t max_model_len) {
  const std::int64_t per_block = kv_cache_bytes_per_block(spec, block_size, dtype);
  if (per_block < 1) throw Error("KV cache: a block of this model takes no memory");
  const auto budget =
      static_cast<std::int64_t>(static_cast<double>(free_bytes) * gpu_memory_utilization) - reserve_bytes;
  const std::int64_t blocks = std::max<std::int64_t>(budget, 0) / per_block;
  const std::int64_t needed = (max_model_len + block_size - 1) / block_size;
  constexpr std::int64_t MiB = 1 << 20;
  if (blocks < needed)
    throw Error("KV cache: " + std::to_string(free_bytes / MiB) + " MiB free x " +
                std::to_string(gpu_memory_utilization) + " - " + std::to_string(reserve_bytes / MiB) +
                " MiB activation reserve fits " + std::to_string(blocks) + " blocks of " +
                std::to_string(per_block / MiB) + " MiB, fewer than the " + std::to_string(needed) +
                " one sequence of max_model_len " + std::to_string(max_model_len) +
                " needs; lower model.max_model_len or scheduler.max_num_batched_tokens, or raise "
                "cache.gpu_memory_utilization");
  return blocks;
}

}  // namespace minivllm
