// Writing K/V into the paged cache by slot mapping, against the CPU reference
// (kernels/cpu/kv_cache.hpp): the whole cache is compared, so slots that must stay untouched are
// checked too.
#include <algorithm>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/kv_cache.hpp"
#include "kernels/cuda/kv_cache.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

class WriteKvKernel : public test::CudaKernelTest {};

TEST_F(WriteKvKernel, MatchesReference) {
  struct Shape {
    std::int64_t num_blocks, block_size, kv_heads, head_dim, tokens;
  };
  // Qwen3-0.6B (8 kv heads x 128), Llama 3.2 1B (8 x 64), the tiny models (2 x 32, 2 x 16);
  // block sizes 1 .. 256; a one-token step.
  for (const Shape s : {Shape{40, 16, 8, 128, 100}, Shape{6, 256, 8, 64, 700},
                        Shape{64, 1, 2, 32, 9}, Shape{20, 7, 2, 16, 1}, Shape{3, 32, 2, 32, 96}}) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " blocks " + std::to_string(s.num_blocks) +
                   " x " + std::to_string(s.block_size) + " tokens " + std::to_string(s.tokens));
      const std::int64_t width = s.kv_heads * s.head_dim, num_slots = s.num_blocks * s.block_size;
      const auto rows = static_cast<std::size_t>(s.tokens * width);
      const auto cache_size = static_cast<std::size_t>(num_slots * width);
      const auto k = random_values(rows, -1, 1, dtype);
      const auto v = random_values(rows, -1, 1, dtype);
      auto key_cache = random_values(cache_size, -1, 1, dtype);
      auto value_cache = random_values(cache_size, -1, 1, dtype);
      // Distinct slots in random order; every fifth token is padding (-1).
      std::vector<std::int64_t> slots(static_cast<std::size_t>(num_slots));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng());
      slots.resize(static_cast<std::size_t>(s.tokens));
      for (std::size_t t = 3; t < slots.size(); t += 5) slots[t] = -1;

      DeviceBuffer d_k = test::upload(k, dtype), d_v = test::upload(v, dtype);
      DeviceBuffer d_key_cache = test::upload(key_cache, dtype);
      DeviceBuffer d_value_cache = test::upload(value_cache, dtype);
      DeviceBuffer d_slots = test::upload_raw(slots);
      ASSERT_CUDA(cuda::launch_write_kv(dtype, d_k.get(), d_v.get(), d_slots.as<std::int64_t>(),
                                        s.tokens, width, d_key_cache.get(), d_value_cache.get(),
                                        num_slots, nullptr));
      ASSERT_CUDA(cudaStreamSynchronize(nullptr));
      cpu::write_kv(k.data(), v.data(), slots.data(), s.tokens, width, key_cache.data(),
                    value_cache.data(), num_slots);
      test::expect_close(test::download(d_key_cache, dtype, cache_size), key_cache, 0.0f,
                         "key cache");
      test::expect_close(test::download(d_value_cache, dtype, cache_size), value_cache, 0.0f,
                         "value cache");
    }
  }
}

TEST_F(WriteKvKernel, SkipsSlotsPastTheCache) {
  const std::int64_t width = 32, num_slots = 4;
  const auto k = random_values(2 * width, -1, 1, DType::f32);
  const auto cache = random_values(num_slots * width, -1, 1, DType::f32);
  DeviceBuffer d_k = test::upload(k, DType::f32);
  DeviceBuffer d_key_cache = test::upload(cache, DType::f32);
  DeviceBuffer d_value_cache = test::upload(cache, DType::f32);
  DeviceBuffer d_slots = test::upload_raw(std::vector<std::int64_t>{num_slots, 1});
  ASSERT_CUDA(cuda::launch_write_kv(DType::f32, d_k.get(), d_k.get(), d_slots.as<std::int64_t>(), 2,
                                    width, d_key_cache.get(), d_value_cache.get(), num_slots,
                                    nullptr));
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  auto want = cache;
  std::copy_n(k.begin() + width, width, want.begin() + width);  // only token 1 lands, in slot 1
  test::expect_close(test::download(d_key_cache, DType::f32, want.size()), want, 0.0f, "key cache");
}

}  // namespace
}  // namespace minivllm
