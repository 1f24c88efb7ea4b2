// The fused attention-inputs kernel (q/k norm, RoPE, KV cache write from the q/k/v projection)
// against the CPU reference (kernels/cpu/attention_inputs.hpp, which composes the norm, RoPE and
// cache-write reference kernels). The whole cache is compared, so slots that must stay untouched
// (padding, other tokens') are checked too.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/layers.hpp>

#include "gpu_test_support.hpp"
#include "kernels/cpu/attention_inputs.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cuda/attention_inputs.cuh"
#include "kernels/cuda/rotary_angles.cuh"
#include "kernels/fp8_scales.hpp"

namespace minivllm {
namespace {

using test::DeviceBuffer;

struct Model {
  const char* name;
  std::int64_t heads, kv_heads, head_dim;
  double theta;
  bool qk_norm;
  std::optional<layers::Llama3RopeScaling> scaling;
};

const layers::Llama3RopeScaling kLlama32Scaling{32.0, 1.0, 4.0, 8192};

const Model kModels[] = {
    {"Qwen3-0.6B", 16, 8, 128, 1e6, true, std::nullopt},
    {"Llama-3.2-1B", 32, 8, 64, 5e5, false, kLlama32Scaling},
    {"tiny qwen3", 4, 2, 32, 1e6, true, std::nullopt},
    {"tiny llama", 4, 2, 16, 5e5, false, kLlama32Scaling},
    // Half heads of no power-of-two count of 16-byte vectors: the one-element path.
    {"head_dim 96", 6, 2, 96, 1e6, true, std::nullopt},
    {"head_dim 12", 3, 1, 12, 5e5, false, std::nullopt},
};
constexpr float kEps = 1e-6f;

class AttentionInputsKernel : public test::CudaKernelTest {
 protected:
  // The tokens' RoPE angles (launch_rotary_angles), as CudaOps computes them once a step.
  static DeviceBuffer rotary(const DeviceBuffer& positions, const DeviceBuffer& inv_freq,
                             std::int64_t tokens, std::int64_t half) {
    DeviceBuffer angles(static_cast<std::size_t>(tokens * 2 * half) * sizeof(float));
    EXPECT_EQ(cuda::launch_rotary_angles(positions.as<std::int32_t>(), inv_freq.as<float>(),
                                         tokens, half, angles.as<float>(), nullptr),
              cudaSuccess);
    return angles;
  }

  // A launch over `tokens` tokens of model m's shape; dtypes, caches and q are the caller's. The
  // norms are set when the model has them.
  static cuda::AttentionInputsParams gpu_params(const Model& m, std::int64_t tokens,
                                                std::int64_t num_slots, const DeviceBuffer& qkv,
                                                const DeviceBuffer& q_norm,
                                                const DeviceBuffer& k_norm,
                                                const DeviceBuffer& slots,
                                                const DeviceBuffer& rotary) {
    cuda::AttentionInputsParams params;
    params.qkv = qkv.get();
    params.slot_mapping = slots.as<std::int64_t>();
    params.rotary = rotary.as<float>();
    params.num_tokens = tokens;
    params.num_heads = m.heads;
    params.num_kv_heads = m.kv_heads;
    params.head_dim = m.head_dim;
    params.num_slots = num_slots;
    if (m.qk_norm) {
      params.q_norm_weight = q_norm.get();
      params.k_norm_weight = k_norm.get();
      params.norm_eps = kEps;
    }
    return params;
  }

  // The CPU reference's arguments for the same launch; caches and q are the caller's.
  static cpu::AttentionInputs cpu_args(const Model& m, std::int64_t tokens, std::int64_t num_slots,
                                       const std::vector<float>& qkv,
                                       const std::vector<std::int32_t>& positions,
                                       const std::vector<std::int64_t>& slots,
                                       const std::vector<float>& inv_freq,
                                       const std::vector<float>& q_norm,
                                       const std::vector<float>& k_norm) {
    cpu::AttentionInputs args;
    args.qkv = qkv.data();
    args.positions = positions.data();
    args.slot_mapping = slots.data();
    args.inv_freq = inv_freq.data();
    if (m.qk_norm) {
      args.q_norm_weight = q_norm.data();
      args.k_norm_weight = k_norm.data();
      args.norm_eps = kEps;
    }
    args.num_tokens = tokens;
    args.num_heads = m.heads;
    args.num_kv_heads = m.kv_heads;
    args.head_dim = m.head_dim;
    args.num_slots = num_slots;
    return args;
  }
};

// Cosines then sines of position x frequency, by sincosf: within 2 ulp of the CPU's.
TEST_F(AttentionInputsKernel, RotaryAnglesMatchCpu) {
  const std::vector<float> inv_freq = layers::rope_inverse_frequencies(128, 1e6);
  const auto half = static_cast<std::int64_t>(inv_freq.size());
  std::vector<std::int32_t> positions(300);
  for (auto& p : positions) p = static_cast<std::int32_t>(random_int(0, 40959));
  const auto tokens = static_cast<std::int64_t>(positions.size());
  DeviceBuffer d_positions = test::upload_raw(positions), d_inv_freq = test::upload_raw(inv_freq);
  const DeviceBuffer angles = rotary(d_positions, d_inv_freq, tokens, half);
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  std::vector<float> want(static_cast<std::size_t>(tokens * 2 * half));
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];
      want[t * 2 * half + i] = std::cos(angle);
      want[t * 2 * half + half + i] = std::sin(angle);
    }
  test::expect_close(test::download(angles, DType::f32, want.size()), want, 1e-6f, "angles");
  EXPECT_EQ(cuda::launch_rotary_angles(d_positions.as<std::int32_t>(), d_inv_freq.as<float>(),
                                       tokens, 0, nullptr, nullptr),
            cudaErrorInvalidValue);
}

TEST_F(AttentionInputsKernel, MatchesReference) {
  for (const Model& m : kModels) {
    std::vector<float> inv_freq = layers::rope_inverse_frequencies(m.head_dim, m.theta);
    if (m.scaling) inv_freq = layers::llama3_scaled_frequencies(inv_freq, *m.scaling);
    DeviceBuffer d_inv_freq = test::upload_raw(inv_freq);
    // A token's heads over several warps (few tokens) or one warp (2500 tokens).
    for (std::int64_t tokens : {1, 7, 130, 2500}) {
      for (DType dtype : test::kElementTypes) {
        SCOPED_TRACE(std::string(m.name) + " " + std::string(dtype_name(dtype)) + " tokens " +
                     std::to_string(tokens));
        const std::int64_t num_slots = 3 * tokens + 5;
        // Positions up to Qwen3's 40960 context, and 0.
        std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
        for (auto& p : positions) p = static_cast<std::int32_t>(random_int(0, 40959));
        positions.front() = 0;
        // Distinct slots in random order; every fifth token from the fourth is padding (-1).
        std::vector<std::int64_t> slots(static_cast<std::size_t>(num_slots));
        std::iota(slots.begin(), slots.end(), 0);
        std::shuffle(slots.begin(), slots.end(), rng());
        slots.resize(static_cast<std::size_t>(tokens));
        for (std::size_t t = 3; t < slots.size(); t += 5) slots[t] = -1;

        const std::int64_t q_width = m.heads * m.head_dim, kv_width = m.kv_heads * m.head_dim;
        const auto q_size = static_cast<std::size_t>(tokens * q_width);
        const auto cache_size = static_cast<std::size_t>(num_slots * kv_width);
        const auto qkv = random_values(static_cast<std::size_t>(tokens * (q_width + 2 * kv_width)),
                                       -2, 2, dtype);
        const auto q_norm = random_values(static_cast<std::size_t>(m.head_dim), 0.5f, 1.5f, dtype);
        const auto k_norm = random_values(static_cast<std::size_t>(m.head_dim), 0.5f, 1.5f, dtype);
        auto key_cache = random_values(cache_size, -1, 1, dtype);
        auto value_cache = random_values(cache_size, -1, 1, dtype);
        DeviceBuffer d_qkv = test::upload(qkv, dtype), d_q(q_size * dtype_size(dtype));
        test::poison(d_q);
        DeviceBuffer d_q_norm = test::upload(q_norm, dtype), d_k_norm = test::upload(k_norm, dtype);
        DeviceBuffer d_key_cache = test::upload(key_cache, dtype);
        DeviceBuffer d_value_cache = test::upload(value_cache, dtype);
        DeviceBuffer d_positions = test::upload_raw(positions), d_slots = test::upload_raw(slots);
        const DeviceBuffer d_rotary = rotary(d_positions, d_inv_freq, tokens, m.head_dim / 2);

        cuda::AttentionInputsParams params =
            gpu_params(m, tokens, num_slots, d_qkv, d_q_norm, d_k_norm, d_slots, d_rotary);
        params.dtype = dtype;
        params.kv_dtype = dtype;
        params.q = d_q.get();
        params.key_cache = d_key_cache.get();
        params.value_cache = d_value_cache.get();
        ASSERT_CUDA(cuda::launch_attention_inputs(params, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));

        std::vector<float> q(q_size);
        cpu::AttentionInputs args =
            cpu_args(m, tokens, num_slots, qkv, positions, slots, inv_freq, q_norm, k_norm);
        args.q = q.data();
        args.key_cache = {key_cache.data(), nullptr};
        args.value_cache = {value_cache.data(), nullptr};
        cpu::attention_inputs(args);
        const float tol = test::tolerance(dtype);
        test::expect_close(test::download(d_q, dtype, q_size), q, tol, "q");
        test::expect_close(test::download(d_key_cache, dtype, cache_size), key_cache, tol,
                           "key cache");
        test::expect_close(test::download(d_value_cache, dtype, cache_size), value_cache, 0.0f,
                           "value cache");
      }
    }
  }
}

// An fp8 cache (codes and per-slot, per-head scales) written as the CPU backend writes it. The
// values are not rotated: their codes and scales must be identical. The keys are, by angles that
// differ from the CPU's in the last bits, so the same scale and codes at most one step apart are
// asked for (or, for a head at a scale's boundary, the next scale and values within a step),
// except for keys that are neither normalized nor rotated (Llama's at position 0): identical.
TEST_F(AttentionInputsKernel, WritesFp8CacheAsTheCpu) {
  // Both sides' caches start as these bytes (e4m3 448, f32 8.4e37: comparable, unlike NaN), so
  // the slots no token writes compare equal and a slot one side skips shows.
  constexpr unsigned char kPoison = 0x7E;
  for (const Model& m : kModels) {
    std::vector<float> inv_freq = layers::rope_inverse_frequencies(m.head_dim, m.theta);
    if (m.scaling) inv_freq = layers::llama3_scaled_frequencies(inv_freq, *m.scaling);
    DeviceBuffer d_inv_freq = test::upload_raw(inv_freq);
    for (std::int64_t tokens : {7, 2500}) {
      for (DType dtype : test::kElementTypes) {
        SCOPED_TRACE(std::string(m.name) + " " + std::string(dtype_name(dtype)) + " tokens " +
                     std::to_string(tokens));
        // Blocks of 16: the scales' layout is per block and head (kernels/fp8_scales.hpp).
        const std::int64_t block_size = 16;
        const std::int64_t num_slots = (tokens + 3 + block_size - 1) / block_size * block_size;
        std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
        for (auto& p : positions) p = static_cast<std::int32_t>(random_int(0, 40959));
        for (std::size_t t = 0; t < positions.size(); t += 3) positions[t] = 0;
        std::vector<std::int64_t> slots(static_cast<std::size_t>(tokens));
        std::iota(slots.begin(), slots.end(), 0);
        std::shuffle(slots.begin(), slots.end(), rng());
        const std::int64_t q_width = m.heads * m.head_dim, kv_width = m.kv_heads * m.head_dim;
        // Spread over 2^-12 .. 2^12 so that the heads' scales differ.
        auto qkv = random_values(static_cast<std::size_t>(tokens * (q_width + 2 * kv_width)), -1,
                                 1, DType::f32);
        for (std::size_t i = 0; i < qkv.size(); ++i)
          qkv[i] = test::stored_value(
              std::ldexp(qkv[i], static_cast<int>(i / m.head_dim % 25) - 12), dtype);
        const auto norm = random_values(static_cast<std::size_t>(m.head_dim), 0.5f, 1.5f, dtype);
        const auto codes_size = static_cast<std::size_t>(num_slots * kv_width);
        const auto scales_size = static_cast<std::size_t>(num_slots * m.kv_heads);
        DeviceBuffer d_qkv = test::upload(qkv, dtype);
        DeviceBuffer d_q(static_cast<std::size_t>(tokens * q_width) * dtype_size(dtype));
        DeviceBuffer d_norm = test::upload(norm, dtype);
        DeviceBuffer d_keys(codes_size), d_values(codes_size);
        DeviceBuffer d_key_scales(scales_size), d_value_scales(scales_size);
        for (const DeviceBuffer* b : {&d_keys, &d_values, &d_key_scales, &d_value_scales})
          ASSERT_CUDA(cudaMemset(b->get(), kPoison, b->bytes()));
        DeviceBuffer d_positions = test::upload_raw(positions), d_slots = test::upload_raw(slots);
        const DeviceBuffer d_rotary = rotary(d_positions, d_inv_freq, tokens, m.head_dim / 2);
        cuda::AttentionInputsParams params =
            gpu_params(m, tokens, num_slots, d_qkv, d_norm, d_norm, d_slots, d_rotary);
        params.dtype = dtype;
        params.kv_dtype = DType::fp8_e4m3;
        params.q = d_q.get();
        params.key_cache = d_keys.get();
        params.value_cache = d_values.get();
        params.key_scales = d_key_scales.as<std::uint8_t>();
        params.value_scales = d_value_scales.as<std::uint8_t>();
        params.block_size = block_size;
        ASSERT_CUDA(cuda::launch_attention_inputs(params, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));

        std::vector<float> q(static_cast<std::size_t>(tokens * q_width));
        // The slots no token writes keep the same poison on both sides.
        std::vector<std::uint8_t> keys(codes_size, kPoison), values(codes_size, kPoison);
        std::vector<std::uint8_t> key_scales(scales_size, kPoison);
        std::vector<std::uint8_t> value_scales(scales_size, kPoison);
        cpu::AttentionInputs args =
            cpu_args(m, tokens, num_slots, qkv, positions, slots, inv_freq, norm, norm);
        args.q = q.data();
        args.key_cache = {keys.data(), key_scales.data(), block_size};
        args.value_cache = {values.data(), value_scales.data(), block_size};
        cpu::attention_inputs(args);

        const auto got_values = test::download_raw<std::uint8_t>(d_values, codes_size);
        const auto got_keys = test::download_raw<std::uint8_t>(d_keys, codes_size);
        const auto got_value_scales =
            test::download_raw<std::uint8_t>(d_value_scales, scales_size);
        const auto got_key_scales = test::download_raw<std::uint8_t>(d_key_scales, scales_size);
        EXPECT_EQ(got_values, values) << "value codes";
        EXPECT_EQ(got_value_scales, value_scales) << "value scales";
        std::int64_t exact_heads = 0;
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t h = 0; h < m.kv_heads; ++h) {
            const std::int64_t head = slots[t] * m.kv_heads + h;
            const bool exact = positions[t] == 0 && !m.qk_norm;
            exact_heads += exact;
            const std::int64_t scale_at = fp8_slot_scale_index(slots[t], h, m.kv_heads, block_size);
            const float got_scale = e8m0_to_scale(got_key_scales[scale_at]);
            const float want_scale = e8m0_to_scale(key_scales[scale_at]);
            // A head whose largest |k| sits at a power-of-two scale's boundary may take the next
            // scale on one side: the same values then have other codes.
            const bool same_scale = got_scale == want_scale;
            ASSERT_TRUE(same_scale || (!exact && (got_scale == 2 * want_scale ||
                                                  want_scale == 2 * got_scale)))
                << "token " << t << " head " << h << ": scale " << got_scale << ", want "
                << want_scale;
            for (std::int64_t d = 0; d < m.head_dim; ++d) {
              const std::uint8_t got = got_keys[head * m.head_dim + d];
              const std::uint8_t want = keys[head * m.head_dim + d];
              // Codes of one sign are ordered like their values (0x80 is -0).
              const int step = std::abs((got & 0x7F) - (want & 0x7F));
              const bool same_sign = (got ^ want) < 0x80 || (got & 0x7F) + (want & 0x7F) <= 1;
              // Across scales: the values within a code step (1/8 of the larger one's binade,
              // or a subnormal step) of each other.
              const float got_value = cpu::e4m3_to_float(got) * got_scale;
              const float want_value = cpu::e4m3_to_float(want) * want_scale;
              const float bound = std::max(std::abs(got_value), std::abs(want_value)) / 8 +
                                  std::ldexp(std::max(got_scale, want_scale), -9);
              ASSERT_TRUE(exact          ? got == want
                          : same_scale   ? same_sign && step <= 1
                                         : std::abs(got_value - want_value) <= bound)
                  << "token " << t << " head " << h << " dim " << d << ": code "
                  << int{got} << ", want " << int{want};
            }
          }
        EXPECT_GT(exact_heads, m.qk_norm ? -1 : 0);
        test::expect_close(test::download(d_q, dtype, q.size()), q, test::tolerance(dtype), "q");
      }
    }
  }
}

TEST_F(AttentionInputsKernel, SkipsSlotsPastTheCache) {
  // One head of 32 (no k/v written for token 0, whose slot is past the cache).
  const std::int64_t head_dim = 32, num_slots = 4;
  const auto qkv = random_values(2 * 3 * head_dim, -1, 1, DType::f32);
  const auto cache = random_values(num_slots * head_dim, -1, 1, DType::f32);
  const std::vector<float> inv_freq = layers::rope_inverse_frequencies(head_dim, 1e6);
  DeviceBuffer d_qkv = test::upload(qkv, DType::f32), d_q(2 * head_dim * sizeof(float));
  DeviceBuffer d_key_cache = test::upload(cache, DType::f32);
  DeviceBuffer d_value_cache = test::upload(cache, DType::f32);
  DeviceBuffer d_positions = test::upload_raw(std::vector<std::int32_t>{0, 0});
  DeviceBuffer d_slots = test::upload_raw(std::vector<std::int64_t>{num_slots, 1});
  DeviceBuffer d_inv_freq = test::upload_raw(inv_freq);
  const DeviceBuffer d_rotary = rotary(d_positions, d_inv_freq, 2, head_dim / 2);
  cuda::AttentionInputsParams params;
  params.dtype = params.kv_dtype = DType::f32;
  params.qkv = d_qkv.get();
  params.q = d_q.get();
  params.key_cache = d_key_cache.get();
  params.value_cache = d_value_cache.get();
  params.slot_mapping = d_slots.as<std::int64_t>();
  params.rotary = d_rotary.as<float>();
  params.num_tokens = 2;
  params.num_heads = 1;
  params.num_kv_heads = 1;
  params.head_dim = head_dim;
  params.num_slots = num_slots;
  ASSERT_CUDA(cuda::launch_attention_inputs(params, nullptr));
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  // Position 0 rotates by nothing: only token 1's k and v land, unchanged, in slot 1.
  auto want_keys = cache, want_values = cache;
  std::copy_n(qkv.begin() + 4 * head_dim, head_dim, want_keys.begin() + head_dim);
  std::copy_n(qkv.begin() + 5 * head_dim, head_dim, want_values.begin() + head_dim);
  test::expect_close(test::download(d_key_cache, DType::f32, cache.size()), want_keys, 0.0f,
                     "key cache");
  test::expect_close(test::download(d_value_cache, DType::f32, cache.size()), want_values, 0.0f,
                     "value cache");
}

TEST_F(AttentionInputsKernel, RejectsUnsupportedHeadDim) {
  cuda::AttentionInputsParams params;
  params.num_tokens = 1;
  params.num_heads = 1;
  for (std::int64_t head_dim : {0, 15, 130, 256}) {
    params.head_dim = head_dim;
    EXPECT_EQ(cuda::launch_attention_inputs(params, nullptr), cudaErrorInvalidValue) << head_dim;
  }
}

}  // namespace
}  // namespace minivllm
