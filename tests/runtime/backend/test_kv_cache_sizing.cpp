// Sizing the KV cache from device memory (cache.num_blocks = 0) and make_ops's backend choice:
// pure arithmetic and the CPU path, no GPU needed.
#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "backend/make_ops.hpp"
#include "error_message.hpp"
#include "model/kv_cache_alloc.hpp"

namespace minivllm {
namespace {

constexpr std::int64_t MiB = 1 << 20;
const KvCacheSpec kSpec{28, 8, 128};  // Qwen3-0.6B

TEST(KvCacheSizing, BytesPerBlockCountKeysAndValuesOfEveryLayer) {
  EXPECT_EQ(kv_cache_bytes_per_block(kSpec, 256, DType::bf16), 2 * 28 * 8 * 128 * 256 * 2);
  EXPECT_EQ(kv_cache_bytes_per_block(kSpec, 16, DType::f32), 2 * 28 * 8 * 128 * 16 * 4);
}

// fp8_e4m3: a code per element and a byte of scale per token and KV head (kv_cache.hpp), so the
// same memory holds 2 x 128 / 129 = 1.98 times the bf16 cache's blocks at head_dim 128.
TEST(KvCacheSizing, Fp8BlocksCountTheirScalesAndFitNearlyTwiceTheBf16Blocks) {
  EXPECT_EQ(kv_cache_bytes_per_block(kSpec, 256, DType::fp8_e4m3), 2 * 28 * 8 * (128 + 1) * 256);
  const std::int64_t bf16 =
      kv_cache_blocks_for_memory(kSpec, 16, DType::bf16, 80000 * MiB, 0.9, 1000 * MiB, 4096);
  const std::int64_t fp8 =
      kv_cache_blocks_for_memory(kSpec, 16, DType::fp8_e4m3, 80000 * MiB, 0.9, 1000 * MiB, 4096);
  EXPECT_EQ(fp8, (71000 * MiB) / (2 * 28 * 8 * 129 * 16));
  EXPECT_NEAR(static_cast<double>(fp8) / static_cast<double>(bf16), 2.0 * 128 / 129, 1e-3);
}

TEST(KvCacheSizing, BlocksAreTheUtilizedFreeMemoryLessTheReserve) {
  const std::int64_t per_block = kv_cache_bytes_per_block(kSpec, 256, DType::bf16);  // 28 MiB
  // 1000 MiB x 0.5 - 100 MiB = 400 MiB: 14 whole blocks of 28 MiB.
  EXPECT_EQ(kv_cache_blocks_for_memory(kSpec, 256, DType::bf16, 1000 * MiB, 0.5, 100 * MiB, 256),
            400 * MiB / per_block);
  EXPECT_EQ(400 * MiB / per_block, 14);
}

TEST(KvCacheSizing, TooLittleForOneMaxModelLenSequenceIsAClearError) {
  // 14 blocks of 256 tokens hold 3584 tokens: 4096 do not fit.
  const std::string message = testing::error_message(
      [] { kv_cache_blocks_for_memory(kSpec, 256, DType::bf16, 1000 * MiB, 0.5, 100 * MiB, 4096); });
  EXPECT_NE(message.find("fits 14 blocks"), std::string::npos) << message;
  EXPECT_NE(message.find("fewer than the 16 one sequence of max_model_len 4096"), std::string::npos)
      << message;
  // A reserve larger than the budget: no blocks, not a negative count.
  EXPECT_THROW(kv_cache_blocks_for_memory(kSpec, 256, DType::bf16, MiB, 0.9, 100 * MiB, 1), Error);
}

TEST(KvCacheSizing, ActivationReserveCoversTheWidestActivationAndTheLogits) {
  ModelConfig m;
  m.vocab_size = 1000;
  m.hidden_size = 64;
  m.intermediate_size = 96;  // widest: gate and up, 2 x 96
  m.num_attention_heads = 4;
  m.num_key_value_heads = 2;
  m.head_dim = 16;
  EXPECT_EQ(activation_reserve_bytes(m, 100, 10),
            100 * 192 * 4 * kActivationBuffers + 2 * 10 * 1000 * 4);
}

TEST(MakeOps, CpuBackendGivesCpuOpsWithAnF32Cache) {
  Config config;
  config.runtime.backend = Backend::cpu;
  config.model.dtype = DType::bf16;
  EXPECT_EQ(make_ops(config)->device(), Device::cpu);
  EXPECT_EQ(kv_cache_dtype(config), DType::f32);
  config.runtime.backend = Backend::cuda;
  EXPECT_EQ(kv_cache_dtype(config), DType::bf16);
  config.cache.kv_cache_dtype = KvCacheDtype::fp8_e4m3;
  EXPECT_EQ(kv_cache_dtype(config), DType::fp8_e4m3);
  config.runtime.backend = Backend::cpu;
  EXPECT_EQ(kv_cache_dtype(config), DType::fp8_e4m3);
}

TEST(MakeOps, AnFp8CacheOnCudaNeedsAHeadSizeItsPrefillKernelTakes) {
  Config config;
  config.model.path = "models/m";
  config.cache.kv_cache_dtype = KvCacheDtype::fp8_e4m3;
  config.runtime.backend = Backend::cpu;
  EXPECT_NO_THROW(check_kv_cache_dtype(config, {2, 2, 96}));  // the CPU takes any head size
  config.runtime.backend = Backend::cuda;
  EXPECT_NO_THROW(check_kv_cache_dtype(config, kSpec));
  EXPECT_NO_THROW(check_kv_cache_dtype(config, {16, 8, 64}));
  const std::string message =
      testing::error_message([&] { check_kv_cache_dtype(config, {2, 2, 96}); });
  EXPECT_NE(message.find("cache.kv_cache_dtype = \"fp8_e4m3\": on the cuda backend its prefill "
                         "kernel takes head_dim 64 or 128, and models/m has 96"),
            std::string::npos)
      << message;
  config.cache.kv_cache_dtype = KvCacheDtype::auto_dtype;
  EXPECT_NO_THROW(check_kv_cache_dtype(config, {2, 2, 96}));
}

TEST(MakeOps, CudaConfigInABuildWithoutCudaSaysHowToGetOne) {
#ifdef MV_BUILT_WITHOUT_CUDA
  Config config;
  config.runtime.backend = Backend::cuda;
  EXPECT_EQ(testing::error_message([&] { make_ops(config); }),
            "runtime.backend = \"cuda\": this build has no CUDA backend (configure with "
            "-Dcuda=enabled)");
#else
  GTEST_SKIP() << "this build has CUDA";
#endif
}

}  // namespace
}  // namespace minivllm
