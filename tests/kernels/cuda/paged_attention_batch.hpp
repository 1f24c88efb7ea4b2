#pragma once
// A batch for the paged attention kernels, built on the host as the engine builds one: random
// queries and K/V rows, physical blocks shuffled, every cache slot that holds no token of the batch
// NaN and unused block table entries -1 (a kernel reading a key it must not read turns its output
// NaN); the kernel run on a poisoned output and the CPU reference (kernels/cpu/attention.hpp).
// quantize_cache turns the cache into an fp8 one (e4m3 codes and scales, kernels/cpu/fp8.hpp),
// which both then read.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_test_support.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/fp8_scales.hpp"

namespace minivllm::test {

struct AttentionHeads {
  const char* name;
  std::int64_t heads, kv_heads, head_dim;
};

struct SequenceLens {
  std::int32_t context_len, query_len;
};

struct PagedBatch {
  AttentionHeads heads;
  std::int64_t block_size = 0, num_blocks = 0, max_blocks_per_seq = 0, num_tokens = 0;
  std::int64_t max_query_len = 0;
  std::vector<float> q, key_cache, value_cache;  // stored values of the batch's dtype
  std::vector<std::int32_t> block_tables, query_start, context_lens;
  // An fp8 cache (quantize_cache): codes and a scale per slot and KV head; empty otherwise.
  std::vector<std::uint8_t> key_codes, value_codes;
  std::vector<std::uint8_t> key_scales, value_scales;  // e8m0 (kernels/fp8_scales.hpp)

  bool fp8() const { return !key_codes.empty(); }

  std::int64_t num_seqs() const { return static_cast<std::int64_t>(context_lens.size()); }
  std::int64_t kv_width() const { return heads.kv_heads * heads.head_dim; }
  std::size_t out_size() const {
    return static_cast<std::size_t>(num_tokens * heads.heads * heads.head_dim);
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(heads.head_dim)); }
};

inline std::string describe(const PagedBatch& b, DType dtype) {
  std::string s = std::string(b.heads.name) + " " + std::string(dtype_name(dtype)) +
                  " block_size " + std::to_string(b.block_size) + " (context, query):";
  for (std::size_t i = 0; i < b.context_lens.size(); ++i)
    s += " (" + std::to_string(b.context_lens[i]) + ", " +
         std::to_string(b.query_start[i + 1] - b.query_start[i]) + ")";
  return s;
}

// Values uniform in [-2, 2), as `dtype` stores them.
inline void fill_random(std::vector<float>& v, std::size_t begin, std::size_t n, DType dtype,
                        std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (std::size_t i = begin; i < begin + n; ++i) v[i] = stored_value(dist(rng), dtype);
}

inline PagedBatch make_paged_batch(const AttentionHeads& heads, std::int64_t block_size,
                                   const std::vector<SequenceLens>& seqs, DType dtype,
                                   std::mt19937_64& rng) {
  PagedBatch b;
  b.heads = heads;
  b.block_size = block_size;
  std::int64_t blocks_needed = 0;
  for (const SequenceLens& s : seqs) {
    const std::int64_t blocks = (s.context_len + block_size - 1) / block_size;
    blocks_needed += blocks;
    b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, blocks + 1);  // a -1 entry each
    b.num_tokens += s.query_len;
    b.max_query_len = std::max<std::int64_t>(b.max_query_len, s.query_len);
  }
  b.num_blocks = blocks_needed + 3;  // blocks no sequence owns
  std::vector<std::int32_t> physical(static_cast<std::size_t>(b.num_blocks));
  std::iota(physical.begin(), physical.end(), 0);
  std::shuffle(physical.begin(), physical.end(), rng);

  const auto slots = static_cast<std::size_t>(b.num_blocks * block_size);
  const auto width = static_cast<std::size_t>(b.kv_width());
  b.key_cache.assign(slots * width, NAN);
  b.value_cache.assign(slots * width, NAN);
  b.block_tables.assign(seqs.size() * b.max_blocks_per_seq, -1);
  b.query_start.push_back(0);
  std::size_t next_block = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const SequenceLens& s = seqs[i];
    b.query_start.push_back(b.query_start.back() + s.query_len);
    b.context_lens.push_back(s.context_len);
    for (std::int64_t p = 0; p < s.context_len; ++p) {
      const std::size_t entry = i * b.max_blocks_per_seq + p / block_size;
      if (p % block_size == 0) b.block_tables[entry] = physical[next_block++];
      const std::size_t row = b.block_tables[entry] * block_size + p % block_size;
      fill_random(b.key_cache, row * width, width, dtype, rng);
      fill_random(b.value_cache, row * width, width, dtype, rng);
    }
  }
  b.q.resize(b.out_size());
  fill_random(b.q, 0, b.q.size(), dtype, rng);
  return b;
}

// The cache as e4m3 codes and scales, each head of each slot (NaN ones too: NaN codes) multiplied
// by 2^-2 .. 2^2 first so that the scales differ. A wider range would let a few heads' outputs
// (near one-hot softmax, |out| ~100) set the batch's tolerance, under which the small rows of
// another sequence could be wrong unnoticed.
inline void quantize_cache(PagedBatch& b) {
  const auto head_dim = static_cast<std::size_t>(b.heads.head_dim);
  const std::size_t heads = b.key_cache.size() / head_dim;
  b.key_codes.resize(b.key_cache.size());
  b.value_codes.resize(b.value_cache.size());
  b.key_scales.resize(heads);
  b.value_scales.resize(heads);
  std::vector<float> head(head_dim);
  const std::int64_t kv_heads = b.heads.kv_heads;
  for (std::size_t h = 0; h < heads; ++h) {
    const int exponent = static_cast<int>(h % 5) - 2;
    const auto slot = static_cast<std::int64_t>(h) / kv_heads;
    const std::int64_t scale_at =
        fp8_slot_scale_index(slot, static_cast<std::int64_t>(h) % kv_heads, kv_heads, b.block_size);
    for (auto [cache, codes, scales] :
         {std::tuple{&b.key_cache, &b.key_codes, &b.key_scales},
          std::tuple{&b.value_cache, &b.value_codes, &b.value_scales}}) {
      for (std::size_t d = 0; d < head_dim; ++d)
        head[d] = std::ldexp((*cache)[h * head_dim + d], exponent);
      cpu::quantize_e4m3_head(head.data(), static_cast<std::int64_t>(head_dim),
                              codes->data() + h * head_dim, scales->data() + scale_at);
    }
  }
}

// The batch on the device in `dtype` (bf16 for an fp8 cache), with a poisoned output.
struct DevicePagedBatch {
  DeviceBuffer q, key_cache, value_cache, key_scales, value_scales, block_tables, query_start,
      context_lens, out;

  DevicePagedBatch(const PagedBatch& b, DType dtype)
      : q(upload(b.q, dtype)),
        key_cache(b.fp8() ? upload_raw(b.key_codes) : upload(b.key_cache, dtype)),
        value_cache(b.fp8() ? upload_raw(b.value_codes) : upload(b.value_cache, dtype)),
        key_scales(upload_raw(b.key_scales)),
        value_scales(upload_raw(b.value_scales)),
        block_tables(upload_raw(b.block_tables)),
        query_start(upload_raw(b.query_start)),
        context_lens(upload_raw(b.context_lens)),
        out(b.out_size() * dtype_size(dtype)) {
    poison(out);
  }

  cuda::PagedAttentionParams params(const PagedBatch& b, DType dtype) const {
    cuda::PagedAttentionParams p;
    p.dtype = dtype;
    p.kv_dtype = b.fp8() ? DType::fp8_e4m3 : dtype;
    if (b.fp8()) {
      p.key_scales = key_scales.as<std::uint8_t>();
      p.value_scales = value_scales.as<std::uint8_t>();
    }
    p.q = q.get();
    p.key_cache = key_cache.get();
    p.value_cache = value_cache.get();
    p.block_tables = block_tables.as<std::int32_t>();
    p.query_start = query_start.as<std::int32_t>();
    p.context_lens = context_lens.as<std::int32_t>();
    p.num_seqs = b.num_seqs();
    p.max_query_len = b.max_query_len;
    p.max_blocks_per_seq = b.max_blocks_per_seq;
    p.num_blocks = b.num_blocks;
    p.block_size = b.block_size;
    p.num_heads = b.heads.heads;
    p.num_kv_heads = b.heads.kv_heads;
    p.head_dim = b.heads.head_dim;
    p.scale = b.scale();
    p.out = out.get();
    return p;
  }
};

inline std::vector<float> paged_attention_reference(const PagedBatch& b) {
  std::vector<float> out(b.out_size());
  cpu::PagedAttentionArgs a;
  a.q = b.q.data();
  if (b.fp8()) {
    a.key_cache = b.key_codes.data();
    a.value_cache = b.value_codes.data();
    a.key_scales = b.key_scales.data();
    a.value_scales = b.value_scales.data();
  } else {
    a.key_cache = b.key_cache.data();
    a.value_cache = b.value_cache.data();
  }
  a.block_tables = b.block_tables.data();
  a.query_start = b.query_start.data();
  a.context_lens = b.context_lens.data();
  a.num_seqs = b.num_seqs();
  a.max_blocks_per_seq = b.max_blocks_per_seq;
  a.num_blocks = b.num_blocks;
  a.block_size = b.block_size;
  a.num_heads = b.heads.heads;
  a.num_kv_heads = b.heads.kv_heads;
  a.head_dim = b.heads.head_dim;
  a.scale = b.scale();
  a.out = out.data();
  cpu::paged_attention(a);
  return out;
}

}  // namespace minivllm::test
