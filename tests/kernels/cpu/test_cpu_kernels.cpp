// The CPU reference ops against direct textbook formulas (double precision, contiguous layouts).
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/bias.hpp"
#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cpu/kv_cache.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/fp8_scales.hpp"

namespace minivllm::cpu {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

TEST(CpuKernels, LinearOnBf16WeightsMatchesDoubleDotProducts) {
  const std::int64_t m = 5, n = 37, k = 70;  // n not a multiple of the 16-row tile
  const auto x = random_floats(m * k, 1), w_f32 = random_floats(n * k, 2);
  std::vector<std::uint16_t> w(w_f32.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(w_f32[i]);
  std::vector<float> y(m * n);
  linear(x.data(), w.data(), DType::bf16, y.data(), m, n, k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (std::int64_t c = 0; c < k; ++c) expected += double(x[i * k + c]) * bf16_to_f32(w[j * k + c]);
      EXPECT_NEAR(y[i * n + j], expected, 1e-5) << i << "," << j;
    }
}

TEST(CpuKernels, LinearSplitsLargeWorkAcrossThreadsWithTheSameResult) {
  const std::int64_t m = 64, n = 1000, k = 64;  // big enough for parallel_for to use threads
  const auto x = random_floats(m * k, 3), w = random_floats(n * k, 4);
  std::vector<float> y(m * n), row(n);
  linear(x.data(), w.data(), DType::f32, y.data(), m, n, k);
  linear(x.data() + 7 * k, w.data(), DType::f32, row.data(), 1, n, k);  // single-threaded path
  for (std::int64_t j = 0; j < n; ++j) EXPECT_EQ(y[7 * n + j], row[j]);
}

// Under ASan the innermost loops run uninstrumented after one check of each whole range
// (checked_range.hpp): a range that runs past its buffer must still be reported.
TEST(CpuKernels, InnermostLoopsPastABuffersEndAreReportedUnderAsan) {
#if !defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "needs AddressSanitizer: runs in scripts/asan.sh's tree";
#else
  const std::vector<float> a(32, 1.0f);
  const auto short_f32 = std::make_unique<float[]>(31);
  const auto short_bf16 = std::make_unique<std::uint16_t[]>(31);
  std::vector<float> out(32);
  EXPECT_EQ(dot(a.data(), a.data(), 32), 32.0f);
  EXPECT_DEATH(dot(a.data(), short_f32.get(), 32), "heap-buffer-overflow");
  EXPECT_DEATH(to_f32(short_bf16.get(), DType::bf16, out.data(), 32), "heap-buffer-overflow");
  EXPECT_DEATH(to_f32(a.data(), DType::bf16, short_f32.get(), 32), "heap-buffer-overflow");
#endif
}

TEST(CpuKernels, RmsNormAndFusedResidualAdd) {
  const std::int64_t rows = 3, dim = 64;
  const auto x = random_floats(rows * dim, 5), w = random_floats(dim, 6);
  auto residual = random_floats(rows * dim, 7);
  const auto residual_before = residual;
  std::vector<float> out(rows * dim), fused(rows * dim);
  rms_norm(x.data(), w.data(), DType::f32, out.data(), rows, dim, 1e-6f);
  add_rms_norm(x.data(), residual.data(), w.data(), DType::f32, fused.data(), rows, dim, 1e-6f);
  for (std::int64_t r = 0; r < rows; ++r) {
    double ms = 0, ms_sum = 0;
    for (std::int64_t i = 0; i < dim; ++i) {
      ms += double(x[r * dim + i]) * x[r * dim + i] / dim;
      const double s = double(x[r * dim + i]) + residual_before[r * dim + i];
      ms_sum += s * s / dim;
    }
    for (std::int64_t i = 0; i < dim; ++i) {
      const double s = double(x[r * dim + i]) + residual_before[r * dim + i];
      EXPECT_NEAR(out[r * dim + i], x[r * dim + i] / std::sqrt(ms + 1e-6) * w[i], 1e-5);
      EXPECT_NEAR(residual[r * dim + i], s, 1e-6);
      EXPECT_NEAR(fused[r * dim + i], s / std::sqrt(ms_sum + 1e-6) * w[i], 1e-5);
    }
  }
}

TEST(CpuKernels, RopeRotatesHalvesPairwiseByPositionTimesFrequency) {
  for (std::int64_t head_dim : {16, 32, 64, 128}) {
    const std::int64_t heads = 2, tokens = 3;
    const std::vector<std::int32_t> positions{0, 5, 300};
    std::vector<float> inv_freq(head_dim / 2);
    for (std::int64_t i = 0; i < head_dim / 2; ++i)
      inv_freq[i] = 1.0f / std::pow(10000.0f, 2.0f * i / head_dim);
    const auto x0 = random_floats(tokens * heads * head_dim, 8);
    auto x = x0;
    rotary_embedding(x.data(), positions.data(), inv_freq.data(), tokens, heads, head_dim);
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = 0; i < head_dim / 2; ++i) {
          const std::int64_t base = (t * heads + h) * head_dim;
          const double angle = double(positions[t]) * inv_freq[i];
          const double a = x0[base + i], b = x0[base + i + head_dim / 2];
          EXPECT_NEAR(x[base + i], a * std::cos(angle) - b * std::sin(angle), 1e-4);
          EXPECT_NEAR(x[base + i + head_dim / 2], b * std::cos(angle) + a * std::sin(angle), 1e-4);
        }
  }
}

TEST(CpuKernels, SiluAndMulTakesGateThenUpFromEachRow) {
  // Two rows of [gate (3), up (3)].
  const std::vector<float> gate_up{-2.0f, 0.0f, 3.0f, 1.5f, 2.0f, -1.0f,
                                   1.0f, -4.0f, 0.5f, -3.0f, 0.25f, 2.0f};
  std::vector<float> out(6);
  silu_and_mul(gate_up.data(), out.data(), 2, 3);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 3; ++i) {
      const double gate = gate_up[r * 6 + i], up = gate_up[r * 6 + 3 + i];
      EXPECT_NEAR(out[r * 3 + i], gate / (1 + std::exp(-gate)) * up, 1e-6);
    }
  }
}

TEST(CpuKernels, AddBiasAddsTheSameBf16VectorToEveryRow) {
  std::vector<float> x{1.0f, 2.0f, 3.0f, -1.0f, -2.0f, -3.0f};
  const std::vector<std::uint16_t> bias{f32_to_bf16(0.5f), f32_to_bf16(-0.25f), f32_to_bf16(2.0f)};
  add_bias(x.data(), bias.data(), DType::bf16, 2, 3);
  EXPECT_EQ(x, (std::vector<float>{1.5f, 1.75f, 5.0f, -0.5f, -2.25f, -1.0f}));
}

TEST(CpuKernels, EmbeddingGathersRowsAndRejectsOutOfRangeIds) {
  const std::vector<float> table{0, 1, 10, 11, 20, 21};  // [3, 2]
  const std::vector<std::int32_t> ids{2, 0};
  std::vector<float> out(4);
  embedding(table.data(), DType::f32, 0, 3, 3, 2, ids.data(), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1}));
  const std::vector<std::int32_t> bad{3};
  EXPECT_THROW(embedding(table.data(), DType::f32, 0, 3, 3, 2, bad.data(), 1, out.data()),
               std::out_of_range);
}

// A vocab-parallel shard (ids [2, 5) of 6): its rows, zeros for the other ids, an error past 6.
TEST(CpuKernels, EmbeddingShardGivesZerosForIdsItDoesNotHold) {
  const std::vector<float> shard{20, 21, 30, 31, 40, 41};  // ids 2, 3, 4
  const std::vector<std::int32_t> ids{1, 2, 4, 5};
  std::vector<float> out(8);
  embedding(shard.data(), DType::f32, 2, 3, 6, 2, ids.data(), 4, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 20, 21, 40, 41, 0, 0}));
  const std::vector<std::int32_t> bad{6};
  EXPECT_THROW(embedding(shard.data(), DType::f32, 2, 3, 6, 2, bad.data(), 1, out.data()),
               std::out_of_range);
}

TEST(CpuKernels, WriteKvFollowsTheSlotMappingAndSkipsNegativeSlots) {
  const std::int64_t width = 2, slots = 4;
  const std::vector<float> k{1, 2, 3, 4, 5, 6}, v{-1, -2, -3, -4, -5, -6};
  const std::vector<std::int64_t> mapping{3, -1, 0};
  std::vector<float> kc(slots * width, 0), vc(slots * width, 0);
  write_kv(k.data(), v.data(), mapping.data(), 3, 1, width, {kc.data()}, {vc.data()}, slots);
  EXPECT_EQ(kc, (std::vector<float>{5, 6, 0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(vc, (std::vector<float>{-5, -6, 0, 0, 0, 0, -1, -2}));
  const std::vector<std::int64_t> past_end{4};
  EXPECT_THROW(
      write_kv(k.data(), v.data(), past_end.data(), 1, 1, width, {kc.data()}, {vc.data()}, slots),
      std::out_of_range);
}

// Two sequences with cached prefixes, their blocks scattered through the cache, against plain
// causal attention over contiguous keys. With `fp8` the cache holds e4m3 codes and scales
// (write_kv) and the reference reads the keys and values they decode to.
void check_paged_attention(std::int64_t head_dim, std::int64_t block_size, bool fp8 = false) {
  const std::int64_t heads = 4, kv_heads = 2, group = heads / kv_heads;
  const std::vector<std::int32_t> context_lens{7, 20}, query_lens{3, 1};  // prefill + decode
  const std::vector<std::int32_t> query_start{0, 3, 4};
  const std::int64_t max_blocks = (20 + block_size - 1) / block_size;
  const std::int64_t num_blocks = 2 * max_blocks;
  // Sequence s's block j is physical block num_blocks - 1 - (2 j + s): reversed, interleaved.
  std::vector<std::int32_t> tables(2 * max_blocks);
  for (std::int64_t s = 0; s < 2; ++s)
    for (std::int64_t j = 0; j < max_blocks; ++j)
      tables[s * max_blocks + j] = static_cast<std::int32_t>(num_blocks - 1 - (2 * j + s));
  const std::int64_t kv_width = kv_heads * head_dim;
  const std::int64_t num_slots = num_blocks * block_size;
  std::vector<float> key_cache(num_slots * kv_width, NAN);
  std::vector<float> value_cache(key_cache.size(), NAN);
  std::vector<std::uint8_t> key_codes(key_cache.size(), 0x7F), value_codes(key_cache.size(), 0x7F);
  // Never-written scales are 0xFF (a NaN's exponent): a read of one shows.
  std::vector<std::uint8_t> key_scales(num_slots * kv_heads, 0xFF);
  std::vector<std::uint8_t> value_scales(key_scales.size(), 0xFF);
  const CacheRows key_rows = fp8 ? CacheRows{key_codes.data(), key_scales.data(), block_size}
                                 : CacheRows{key_cache.data()};
  const CacheRows value_rows = fp8 ? CacheRows{value_codes.data(), value_scales.data(), block_size}
                                   : CacheRows{value_cache.data()};
  std::vector<std::vector<float>> keys(2), values(2);  // contiguous [position, kv_width]
  for (int s = 0; s < 2; ++s) {
    keys[s] = random_floats(context_lens[s] * kv_width, 10 + s);
    values[s] = random_floats(context_lens[s] * kv_width, 20 + s);
    std::vector<std::int64_t> slots(static_cast<std::size_t>(context_lens[s]));
    for (std::int64_t p = 0; p < context_lens[s]; ++p)
      slots[p] = tables[s * max_blocks + p / block_size] * block_size + p % block_size;
    write_kv(keys[s].data(), values[s].data(), slots.data(), context_lens[s], kv_heads, head_dim,
             key_rows, value_rows, num_slots);
    if (fp8)  // the reference attends to what the cache holds
      for (std::int64_t p = 0; p < context_lens[s]; ++p)
        for (std::int64_t h = 0; h < kv_heads; ++h) {
          const std::int64_t at = slots[p] * kv_width + h * head_dim;
          const std::int64_t scale_at = fp8_slot_scale_index(slots[p], h, kv_heads, block_size);
          dequantize_e4m3_head(&key_codes[at], key_scales[scale_at], head_dim,
                               &keys[s][p * kv_width + h * head_dim]);
          dequantize_e4m3_head(&value_codes[at], value_scales[scale_at], head_dim,
                               &values[s][p * kv_width + h * head_dim]);
        }
  }
  const auto q = random_floats(4 * heads * head_dim, 30);
  std::vector<float> out(q.size());
  const float scale = 1.0f / std::sqrt(float(head_dim));
  PagedAttentionArgs args;
  args.q = q.data();
  args.key_cache = key_rows.data;
  args.value_cache = value_rows.data;
  args.key_scales = key_rows.scales;
  args.value_scales = value_rows.scales;
  args.block_tables = tables.data();
  args.query_start = query_start.data();
  args.context_lens = context_lens.data();
  args.num_seqs = 2;
  args.max_blocks_per_seq = max_blocks;
  args.num_blocks = num_blocks;
  args.block_size = block_size;
  args.num_heads = heads;
  args.num_kv_heads = kv_heads;
  args.head_dim = head_dim;
  args.scale = scale;
  args.out = out.data();
  paged_attention(args);

  for (int s = 0; s < 2; ++s)
    for (std::int32_t i = 0; i < query_lens[s]; ++i) {
      const std::int64_t t = query_start[s] + i;
      const std::int64_t position = context_lens[s] - query_lens[s] + i;
      for (std::int64_t h = 0; h < heads; ++h) {
        const std::int64_t kv_off = (h / group) * head_dim;
        std::vector<double> w(position + 1);
        double max_w = -INFINITY, sum = 0;
        for (std::int64_t p = 0; p <= position; ++p) {
          double d = 0;
          for (std::int64_t c = 0; c < head_dim; ++c)
            d += double(q[(t * heads + h) * head_dim + c]) * keys[s][p * kv_width + kv_off + c];
          w[p] = d * scale;
          max_w = std::max(max_w, w[p]);
        }
        for (auto& x : w) sum += (x = std::exp(x - max_w));
        for (std::int64_t c = 0; c < head_dim; ++c) {
          double expected = 0;
          for (std::int64_t p = 0; p <= position; ++p)
            expected += w[p] / sum * values[s][p * kv_width + kv_off + c];
          ASSERT_NEAR(out[(t * heads + h) * head_dim + c], expected, 1e-5)
              << "head_dim " << head_dim << " block " << block_size << " seq " << s << " token " << i;
        }
      }
    }
}

TEST(CpuKernels, PagedAttentionMatchesContiguousCausalAttentionWithGqa) {
  for (std::int64_t head_dim : {16, 32, 64, 128})
    for (std::int64_t block_size : {1, 3, 16, 256}) check_paged_attention(head_dim, block_size);
}

TEST(CpuKernels, PagedAttentionReadsAnFp8CacheAsTheValuesItsCodesDecodeTo) {
  for (std::int64_t head_dim : {16, 128})
    for (std::int64_t block_size : {1, 16}) check_paged_attention(head_dim, block_size, true);
}

}  // namespace
}  // namespace minivllm::cpu
