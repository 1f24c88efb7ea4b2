// RoPE, alone (Llama, with llama3-scaled frequencies) and fused with Qwen3's per-head q/k norm,
// against the CPU reference ops (kernels/cpu/rope.hpp after kernels/cpu/norm.hpp).
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/layers.hpp>

#include "gpu_test_support.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cuda/rope.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

struct Model {
  const char* name;
  std::int64_t heads, kv_heads, head_dim;
  double theta;
  bool qk_norm;
  std::optional<Llama3RopeScaling> scaling;
};

const Llama3RopeScaling kLlama32Scaling{32.0, 1.0, 4.0, 8192};

const Model kModels[] = {
    {"Qwen3-0.6B", 16, 8, 128, 1e6, true, std::nullopt},
    {"Llama-3.2-1B", 32, 8, 64, 5e5, false, kLlama32Scaling},
    {"tiny qwen3", 4, 2, 32, 1e6, true, std::nullopt},
    {"tiny llama", 4, 2, 16, 5e5, false, kLlama32Scaling},
};
constexpr float kEps = 1e-6f;

class RotaryKernel : public test::CudaKernelTest {};

TEST_F(RotaryKernel, MatchesReference) {
  for (const Model& m : kModels) {
    std::vector<float> inv_freq = layers::rope_inverse_frequencies(m.head_dim, m.theta);
    if (m.scaling) inv_freq = layers::llama3_scaled_frequencies(inv_freq, *m.scaling);
    DeviceBuffer d_inv_freq = test::upload_raw(inv_freq);
    for (std::int64_t tokens : {1, 7, 130}) {
      for (DType dtype : test::kElementTypes) {
        SCOPED_TRACE(std::string(m.name) + " " + std::string(dtype_name(dtype)) + " tokens " +
                     std::to_string(tokens));
        // Positions up to Qwen3's 40960 context, and 0.
        std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
        for (auto& p : positions) p = static_cast<std::int32_t>(random_int(0, 40959));
        positions.front() = 0;
        const auto q_size = static_cast<std::size_t>(tokens * m.heads * m.head_dim);
        const auto k_size = static_cast<std::size_t>(tokens * m.kv_heads * m.head_dim);
        auto q = random_values(q_size, -2, 2, dtype);
        auto k = random_values(k_size, -2, 2, dtype);
        const auto q_norm = random_values(static_cast<std::size_t>(m.head_dim), 0.5f, 1.5f, dtype);
        const auto k_norm = random_values(static_cast<std::size_t>(m.head_dim), 0.5f, 1.5f, dtype);
        DeviceBuffer d_q = test::upload(q, dtype), d_k = test::upload(k, dtype);
        DeviceBuffer d_q_norm = test::upload(q_norm, dtype), d_k_norm = test::upload(k_norm, dtype);
        DeviceBuffer d_positions = test::upload_raw(positions);

        cuda::RotaryParams params;
        params.dtype = dtype;
        params.q = d_q.get();
        params.k = d_k.get();
        params.positions = d_positions.as<std::int32_t>();
        params.inv_freq = d_inv_freq.as<float>();
        params.num_tokens = tokens;
        params.num_heads = m.heads;
        params.num_kv_heads = m.kv_heads;
        params.head_dim = m.head_dim;
        if (m.qk_norm) {
          params.q_norm_weight = d_q_norm.get();
          params.k_norm_weight = d_k_norm.get();
          params.norm_eps = kEps;
        }
        ASSERT_CUDA(cuda::launch_rotary_embedding(params, nullptr));
        ASSERT_CUDA(cudaStreamSynchronize(nullptr));

        if (m.qk_norm) {
          cpu::rms_norm(q.data(), q_norm.data(), DType::f32, q.data(), tokens * m.heads, m.head_dim,
                        kEps);
          cpu::rms_norm(k.data(), k_norm.data(), DType::f32, k.data(), tokens * m.kv_heads,
                        m.head_dim, kEps);
        }
        cpu::rotary_embedding(q.data(), positions.data(), inv_freq.data(), tokens, m.heads,
                              m.head_dim);
        cpu::rotary_embedding(k.data(), positions.data(), inv_freq.data(), tokens, m.kv_heads,
                              m.head_dim);
        test::expect_close(test::download(d_q, dtype, q_size), q, test::tolerance(dtype), "q");
        test::expect_close(test::download(d_k, dtype, k_size), k, test::tolerance(dtype), "k");
      }
    }
  }
}

TEST_F(RotaryKernel, RejectsUnsupportedHeadDim) {
  cuda::RotaryParams params;
  params.num_tokens = 1;
  params.num_heads = 1;
  for (std::int64_t head_dim : {0, 15, 130, 256}) {
    params.head_dim = head_dim;
    EXPECT_EQ(cuda::launch_rotary_embedding(params, nullptr), cudaErrorInvalidValue) << head_dim;
  }
}

}  // namespace
}  // namespace minivllm
