// The embedding gather against the CPU reference (kernels/cpu/embedding.hpp).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cuda/embedding.cuh"

namespace minivllm {
namespace {

using test::DeviceBuffer;

class EmbeddingKernel : public test::CudaKernelTest {
 protected:
  // Gathers `ids` from a random [vocab, dim] table on the GPU; returns the output as f32.
  // With `fed`, ids -1 - r stand for fed[r] (uploaded as the launcher's device array). With
  // `first_id`, the table holds ids [first_id, first_id + its rows) of the vocabulary.
  std::vector<float> gather(DType dtype, const std::vector<float>& table, std::int64_t vocab,
                            std::int64_t dim, const std::vector<std::int32_t>& ids,
                            const std::vector<std::int32_t>& fed = {}, std::int64_t first_id = 0) {
    const auto rows = static_cast<std::int64_t>(table.size()) / dim;
    const auto n = static_cast<std::int64_t>(ids.size());
    DeviceBuffer d_table = test::upload(table, dtype);
    DeviceBuffer d_ids = test::upload_raw(ids);
    DeviceBuffer d_fed = test::upload_raw(fed.empty() ? std::vector<std::int32_t>{0} : fed);
    DeviceBuffer d_out(static_cast<std::size_t>(n * dim) * dtype_size(dtype));
    test::poison(d_out);
    EXPECT_EQ(cuda::launch_embedding(dtype, d_table.get(), first_id, rows, vocab, dim,
                                     d_ids.as<std::int32_t>(),
                                     fed.empty() ? nullptr : d_fed.as<std::int32_t>(), n,
                                     d_out.get(), nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    return test::download(d_out, dtype, static_cast<std::size_t>(n * dim));
  }
};

TEST_F(EmbeddingKernel, MatchesReference) {
  struct Shape {
    std::int64_t vocab, dim, tokens;
  };
  // Qwen3-0.6B's and Llama 3.2 1B's hidden sizes, the tiny models', a one-token batch, many
  // tokens; rows of no whole 16-byte vectors (the one-element path).
  for (const Shape s : {Shape{5000, 1024, 300}, Shape{3000, 2048, 77}, Shape{37, 64, 1},
                        Shape{100, 16, 513}, Shape{1000, 1024, 4099}, Shape{50, 33, 9}}) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " vocab " + std::to_string(s.vocab) + " dim " +
                   std::to_string(s.dim) + " tokens " + std::to_string(s.tokens));
      const auto table = random_values(static_cast<std::size_t>(s.vocab * s.dim), -1, 1, dtype);
      std::vector<std::int32_t> ids(static_cast<std::size_t>(s.tokens));
      for (auto& id : ids) id = static_cast<std::int32_t>(random_int(0, s.vocab - 1));
      ids.front() = static_cast<std::int32_t>(s.vocab - 1);  // the table's last row
      const auto got = gather(dtype, table, s.vocab, s.dim, ids);
      std::vector<float> want(got.size());
      cpu::embedding(table.data(), DType::f32, 0, s.vocab, s.vocab, s.dim, ids.data(), s.tokens,
                     want.data());
      test::expect_close(got, want, 0.0f, "embedding");
    }
  }
}

TEST_F(EmbeddingKernel, IdOutsideVocabularyGivesNanRow) {
  const std::int64_t vocab = 50;
  for (const std::int64_t dim : {32, 31}) {  // 16-byte vectors, single elements
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const auto table = random_values(static_cast<std::size_t>(vocab * dim), -1, 1, dtype);
      const std::vector<std::int32_t> ids = {3, -1, static_cast<std::int32_t>(vocab), 7};
      const auto got = gather(dtype, table, vocab, dim, ids);
      for (std::int64_t d = 0; d < dim; ++d) {
        EXPECT_EQ(got[d], table[3 * dim + d]);
        EXPECT_TRUE(std::isnan(got[dim + d]));
        EXPECT_TRUE(std::isnan(got[2 * dim + d]));
        EXPECT_EQ(got[3 * dim + d], table[7 * dim + d]);
      }
    }
  }
}

// A vocab-parallel shard: the rows of its ids, zeros for the other ranks' ids, as on the CPU.
TEST_F(EmbeddingKernel, AShardGivesZerosForIdsItDoesNotHold) {
  const std::int64_t vocab = 64, first = 16, rows = 16;
  for (const std::int64_t dim : {32, 31}) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const auto shard = random_values(static_cast<std::size_t>(rows * dim), -1, 1, dtype);
      const std::vector<std::int32_t> ids = {15, 16, 31, 32, 0, 63, 20};
      const auto got = gather(dtype, shard, vocab, dim, ids, {}, first);
      std::vector<float> want(got.size());
      cpu::embedding(shard.data(), DType::f32, first, rows, vocab, dim, ids.data(),
                     static_cast<std::int64_t>(ids.size()), want.data());
      test::expect_close(got, want, 0.0f, "shard embedding");
      for (std::int64_t d = 0; d < dim; ++d) {
        EXPECT_EQ(got[d], 0.0f);                         // id 15: below the shard
        EXPECT_EQ(got[dim + d], shard[d]);               // id 16: its first row
        EXPECT_EQ(got[3 * dim + d], 0.0f);               // id 32: above it
      }
    }
  }
}

TEST_F(EmbeddingKernel, NegativeIdsTakeFedTokens) {
  const std::int64_t vocab = 60;
  for (const std::int64_t dim : {64, 31}) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const auto table = random_values(static_cast<std::size_t>(vocab * dim), -1, 1, dtype);
      std::vector<std::int32_t> fed(9);
      for (auto& id : fed) id = static_cast<std::int32_t>(random_int(0, vocab - 1));
      // Fed rows in any order, mixed with plain ids.
      const std::vector<std::int32_t> ids = {-1 - 4, 11, -1 - 0, -1 - 8, 2, -1 - 4};
      std::vector<std::int32_t> resolved;
      for (std::int32_t id : ids) resolved.push_back(id < 0 ? fed[-1 - id] : id);
      const auto got = gather(dtype, table, vocab, dim, ids, fed);
      std::vector<float> want(got.size());
      cpu::embedding(table.data(), DType::f32, 0, vocab, vocab, dim, resolved.data(),
                     static_cast<std::int64_t>(resolved.size()), want.data());
      test::expect_close(got, want, 0.0f, "fed embedding");
    }
  }
}

}  // namespace
}  // namespace minivllm
