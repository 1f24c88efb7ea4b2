#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/fp8_scales.hpp"

namespace minivllm::cpu {

namespace {

// Where position p of sequence s lives: a row of [num_slots, num_kv_heads * head_dim].
std::int64_t slot_of(const PagedAttentionArgs& a, std::int64_t s, std::int64_t p) {
  const std::int32_t block = a.block_tables[s * a.max_blocks_per_seq + p / a.block_size];
  if (block < 0 || block >= a.num_blocks)
    throw std::invalid_argument("paged_attention: sequence " + std::to_string(s) + " position " +
                                std::to_string(p) + " maps to block " + std::to_string(block) +
                                " outside the cache's " + std::to_string(a.num_blocks));
  return static_cast<std::int64_t>(block) * a.block_size + p % a.block_size;
}

void check_ranges(const PagedAttentionArgs& a) {
  for (std::int64_t s = 0; s < a.num_seqs; ++s) {
    const std::int64_t query_len = a.query_start[s + 1] - a.query_start[s];
    if (query_len < 0 || a.context_lens[s] < query_len ||
        a.context_lens[s] > a.max_blocks_per_seq * a.block_size)
      throw std::invalid_argument("paged_attention: sequence " + std::to_string(s) +
                                  " has query_len " + std::to_string(query_len) +
                                  " and context_len " + std::to_string(a.context_lens[s]));
  }
}

// Head `kv_head` of slot `slot` as f32: in the cache itself, or dequantized into `buffer`.
const float* cached_head(const void* cache, const std::uint8_t* scales, std::int64_t slot,
                         std::int64_t kv_head, const PagedAttentionArgs& a, float* buffer) {
  const std::int64_t offset = (slot * a.num_kv_heads + kv_head) * a.head_dim;
  if (scales == nullptr) return static_cast<const float*>(cache) + offset;
  dequantize_e4m3_head(static_cast<const std::uint8_t*>(cache) + offset,
                       scales[fp8_slot_scale_index(slot, kv_head, a.num_kv_heads, a.block_size)],
                       a.head_dim, buffer);
  return buffer;
}

}  // namespace

void paged_attention(const PagedAttentionArgs& a) {
  check_ranges(a);
  const std::int64_t num_tokens = a.query_start[a.num_seqs];
  const std::int64_t group = a.num_heads / a.num_kv_heads;
  const std::int64_t max_context = a.max_blocks_per_seq * a.block_size;

  parallel_for(num_tokens, max_context * a.num_heads * a.head_dim * 2,
               [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int64_t> slots;
    std::vector<float> scores;
    std::vector<float> head(static_cast<std::size_t>(a.head_dim));
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t s =
          std::upper_bound(a.query_start, a.query_start + a.num_seqs + 1, t) - a.query_start - 1;
      const std::int64_t query_len = a.query_start[s + 1] - a.query_start[s];
      const std::int64_t position = a.context_lens[s] - query_len + (t - a.query_start[s]);
      const std::int64_t num_keys = position + 1;
      slots.resize(static_cast<std::size_t>(num_keys));
      for (std::int64_t p = 0; p < num_keys; ++p) slots[p] = slot_of(a, s, p);
      scores.resize(static_cast<std::size_t>(num_keys));

      for (std::int64_t h = 0; h < a.num_heads; ++h) {
        const float* q = a.q + (t * a.num_heads + h) * a.head_dim;
        const std::int64_t kv_head = h / group;
        // softmax(q . k * scale) over the keys, max-subtracted for range, in fp32.
        float max_score = -INFINITY;
        for (std::int64_t p = 0; p < num_keys; ++p) {
          const float* k = cached_head(a.key_cache, a.key_scales, slots[p], kv_head, a, head.data());
          scores[p] = dot(q, k, a.head_dim) * a.scale;
          max_score = std::max(max_score, scores[p]);
        }
        float sum = 0.0f;
        for (std::int64_t p = 0; p < num_keys; ++p) {
          scores[p] = std::exp(scores[p] - max_score);
          sum += scores[p];
        }
        float* out = a.out + (t * a.num_heads + h) * a.head_dim;
        std::fill_n(out, a.head_dim, 0.0f);
        for (std::int64_t p = 0; p < num_keys; ++p) {
          const float weight = scores[p] / sum;
          const float* v =
              cached_head(a.value_cache, a.value_scales, slots[p], kv_head, a, head.data());
          for (std::int64_t d = 0; d < a.head_dim; ++d) out[d] += weight * v[d];
        }
      }
    }
  });
}

}  // namespace minivllm::cpu
