// Prefill and decode attention over the paged KV cache against the CPU reference
// (kernels/cpu/attention.hpp). Physical blocks are shuffled, and every cache slot that holds no
// token of the batch is NaN, as are unused block table entries (-1): a kernel reading a key it must
// not read turns its output NaN.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "kernels/cuda/paged_attention.cuh"
#include "paged_attention_batch.hpp"

namespace minivllm {
namespace {

using test::DeviceBuffer;

using test::AttentionHeads;
using test::PagedBatch;
using Sequence = test::SequenceLens;

// The models' head counts (Qwen3-0.6B, Llama 3.2 1B, the tiny models), plain multi-head attention,
// and a group of 8 query heads per KV head (more than one decode block's 4 rows).
const AttentionHeads kHeads[] = {{"Qwen3-0.6B", 16, 8, 128}, {"Llama-3.2-1B", 32, 8, 64},
                                 {"tiny qwen3", 4, 2, 32},   {"tiny llama", 4, 2, 16},
                                 {"multi-head", 4, 4, 32},   {"group of 8", 16, 2, 64}};
constexpr std::int64_t kBlockSizes[] = {1, 7, 16, 256};

enum class Kernel { prefill, decode };

// The decode kernel's workspace: what it asks for (long contexts of small batches split), half of
// that (fewer splits), or none (one split).
enum class Workspace { wanted, half, none };

const char* workspace_name(Workspace w) {
  switch (w) {
    case Workspace::wanted: return "the wanted workspace";
    case Workspace::half: return "half the wanted workspace";
    case Workspace::none: return "no workspace";
  }
  return "?";
}

class PagedAttentionKernel : public test::CudaKernelTest {
 protected:
  PagedBatch make_batch(const AttentionHeads& heads, std::int64_t block_size,
                        const std::vector<Sequence>& seqs, DType dtype) {
    return test::make_paged_batch(heads, block_size, seqs, dtype, rng());
  }

  // The kernel's output, as f32, from a poisoned output buffer (and poisoned workspace).
  // seq_order: the decode kernel's order of the sequences, and with it the batch's total context
  // (PagedAttentionParams::seq_order, total_context).
  std::vector<float> run_gpu(Kernel kernel, const PagedBatch& b, DType dtype,
                             Workspace workspace = Workspace::wanted,
                             const std::vector<std::int32_t>& seq_order = {}) {
    const test::DevicePagedBatch d(b, dtype);
    DeviceBuffer d_seq_order = test::upload_raw(seq_order);
    DeviceBuffer d_total_context = test::upload_raw(std::vector<std::int64_t>{std::accumulate(
        b.context_lens.begin(), b.context_lens.end(), std::int64_t{0})});
    cuda::PagedAttentionParams p = d.params(b, dtype);
    if (!seq_order.empty()) {
      p.seq_order = d_seq_order.as<std::int32_t>();
      p.total_context = d_total_context.as<std::int64_t>();
    }
    const std::size_t wanted = cuda::decode_attention_workspace_bytes(p);
    DeviceBuffer d_workspace(workspace == Workspace::half ? wanted / 2 : wanted);
    test::poison(d_workspace);
    if (workspace != Workspace::none) {
      p.workspace = d_workspace.get();
      p.workspace_bytes = d_workspace.bytes();
    }
    const cudaError_t err = kernel == Kernel::prefill ? cuda::launch_prefill_attention(p, nullptr)
                                                      : cuda::launch_decode_attention(p, nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    return test::download(d.out, dtype, b.out_size());
  }

  static std::vector<float> run_cpu(const PagedBatch& b) {
    return test::paged_attention_reference(b);
  }

  // Both kernels that handle the batch against the reference.
  void check(const AttentionHeads& heads, std::int64_t block_size,
             const std::vector<Sequence>& seqs, bool decode_batch) {
    for (DType dtype : test::kElementTypes) {
      const PagedBatch b = make_batch(heads, block_size, seqs, dtype);
      SCOPED_TRACE(test::describe(b, dtype));
      const auto want = run_cpu(b);
      test::expect_close(run_gpu(Kernel::prefill, b, dtype), want, test::flash_tolerance(dtype),
                         "prefill kernel");
      if (decode_batch)
        test::expect_close(run_gpu(Kernel::decode, b, dtype), want, test::tolerance(dtype),
                           "decode kernel");
    }
  }

  // The decode kernel with each workspace, and with its sequences in a random order, against the
  // reference.
  void check_decode(const AttentionHeads& heads, std::int64_t block_size,
                    const std::vector<Sequence>& seqs) {
    for (DType dtype : test::kElementTypes) {
      const PagedBatch b = make_batch(heads, block_size, seqs, dtype);
      SCOPED_TRACE(test::describe(b, dtype));
      const auto want = run_cpu(b);
      for (Workspace workspace : {Workspace::wanted, Workspace::half, Workspace::none})
        test::expect_close(run_gpu(Kernel::decode, b, dtype, workspace), want,
                           test::tolerance(dtype),
                           std::string("decode kernel with ") + workspace_name(workspace));
      std::vector<std::int32_t> order(seqs.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng());
      test::expect_close(run_gpu(Kernel::decode, b, dtype, Workspace::wanted, order), want,
                         test::tolerance(dtype),
                         "decode kernel, sequences in a random order, total context given");
    }
  }

  // Bytes of workspace the decode kernel wants for a batch of these shapes.
  static std::size_t workspace_bytes(const AttentionHeads& heads, std::int64_t block_size,
                                     std::int64_t num_seqs, std::int64_t max_context) {
    cuda::PagedAttentionParams p;
    p.num_seqs = num_seqs;
    p.max_blocks_per_seq = (max_context + block_size - 1) / block_size;
    p.num_blocks = 1;
    p.block_size = block_size;
    p.num_heads = heads.heads;
    p.num_kv_heads = heads.kv_heads;
    p.head_dim = heads.head_dim;
    return cuda::decode_attention_workspace_bytes(p);
  }

  std::int32_t random_len(std::int32_t lo, std::int32_t hi) {
    return static_cast<std::int32_t>(random_int(lo, hi));
  }
};

TEST_F(PagedAttentionKernel, DecodeMatchesReference) {
  for (const AttentionHeads& heads : kHeads) {
    for (std::int64_t bs : kBlockSizes) {
      const auto block = static_cast<std::int32_t>(bs);
      // Contexts of one token, ending exactly on and just past block boundaries, and random.
      std::vector<Sequence> seqs;
      for (std::int32_t context : {1, block, block + 1, 2 * block, 2 * block + 1,
                                   random_len(1, 600), random_len(1, 600)})
        seqs.push_back({context, 1});
      seqs.insert(seqs.begin() + 2, Sequence{block + 3, 0});  // padding: no new token
      check(heads, bs, seqs, /*decode_batch=*/true);
    }
  }
}

// Contexts up to 8k in a small batch: many splits, a merge, and sequences that end in the first
// split, on a split's last key or just past it.
TEST_F(PagedAttentionKernel, DecodeLongContextsMatchReference) {
  for (const AttentionHeads& heads : {kHeads[0], kHeads[1]}) {
    for (std::int64_t bs : {16, 256}) {
      std::vector<Sequence> seqs;
      for (std::int32_t context : {8192, 8193, 4096, 1025, 1024, 513, 512, 257, 256, 1})
        seqs.push_back({context, 1});
      seqs.push_back({random_len(1, 8192), 1});
      EXPECT_GT(workspace_bytes(heads, bs, static_cast<std::int64_t>(seqs.size()), 8193), 0u)
          << "a small batch of long contexts should use several splits";
      check_decode(heads, bs, seqs);
    }
  }
}

// Ragged batches of 1 to 256 sequences over group sizes 1, 2, 4 and 8 and block sizes 1, 16 and
// 256; some padding (no new token) too.
TEST_F(PagedAttentionKernel, DecodeRaggedBatchesMatchReference) {
  struct Case {
    AttentionHeads heads;
    std::int64_t block_size, batch;
    std::int32_t max_context;
  };
  const Case cases[] = {{kHeads[0], 16, 256, 160},  {kHeads[0], 256, 1, 3000},
                        {kHeads[1], 256, 64, 700},  {kHeads[1], 1, 9, 600},
                        {kHeads[4], 1, 37, 400},    {kHeads[5], 16, 100, 500},
                        {kHeads[3], 256, 3, 5000},  {kHeads[2], 16, 17, 1200},
                        // One wave of blocks: with the total context given, balanced splits;
                        // above 2,048 keys of width, up to four of them.
                        {kHeads[0], 16, 60, 2048},  {kHeads[0], 256, 48, 8704}};
  for (const Case& c : cases) {
    std::vector<Sequence> seqs;
    for (std::int64_t i = 0; i < c.batch; ++i)
      seqs.push_back({random_len(1, c.max_context), random_int(0, 20) == 0 ? 0 : 1});  // padding
    check_decode(c.heads, c.block_size, seqs);
  }
  EXPECT_EQ(workspace_bytes(kHeads[0], 16, 256, 1024), 0u)
      << "a large batch should fill the GPU with one split per sequence";
}

TEST_F(PagedAttentionKernel, PrefillMatchesReference) {
  for (const AttentionHeads& heads : kHeads) {
    for (std::int64_t bs : kBlockSizes) {
      const auto block = static_cast<std::int32_t>(bs);
      const std::int32_t prompt = random_len(2, 200);
      const std::vector<Sequence> seqs = {
          {block, block},                // a prompt filling its blocks exactly
          {1, 1},                        // a one-token prompt
          {block + 1, block + 1},        // just past a block boundary
          {3 * block + 5, 7},            // a prefix-cache hit of 3 blocks and change
          {2 * block, block},            // a second prefill chunk ending on a boundary
          {2 * block + 1, 1},            // a decode step in the same batch
          {prompt + 3, prompt},          // random
      };
      check(heads, bs, seqs, /*decode_batch=*/false);
    }
  }
}

// Short contexts, and long ones that the decode kernel splits (the bad block in one split).
TEST_F(PagedAttentionKernel, BlockOutsideCacheGivesNan) {
  const AttentionHeads heads = kHeads[0];
  const auto row = static_cast<std::ptrdiff_t>(heads.heads * heads.head_dim);  // sequence 0's
  for (const std::int32_t context : {20, 3000}) {
    for (DType dtype : test::kElementTypes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " context " + std::to_string(context));
      PagedBatch b = make_batch(heads, 16, {{context, 1}, {2 * context, 1}}, dtype);
      const auto want = run_cpu(b);
      b.block_tables[1] = static_cast<std::int32_t>(b.num_blocks);  // sequence 0's second block
      for (Kernel kernel : {Kernel::prefill, Kernel::decode}) {
        const auto got = run_gpu(kernel, b, dtype);
        EXPECT_TRUE(
            std::all_of(got.begin(), got.begin() + row, [](float x) { return std::isnan(x); }));
        test::expect_close(std::vector<float>(got.begin() + row, got.end()),
                           std::vector<float>(want.begin() + row, want.end()),
                           test::tolerance(dtype), "the other sequence");
      }
    }
  }
}

TEST_F(PagedAttentionKernel, RejectsUnsupportedShapes) {
  DeviceBuffer buf(4096);
  cuda::PagedAttentionParams p;
  p.q = p.key_cache = p.value_cache = buf.get();
  p.block_tables = p.query_start = p.context_lens = buf.as<std::int32_t>();
  p.out = buf.get();
  p.num_seqs = p.max_query_len = p.max_blocks_per_seq = p.num_blocks = 1;
  p.block_size = 16;
  p.num_heads = 4;
  p.num_kv_heads = 2;
  const auto rejects = [&](const char* what) {
    EXPECT_EQ(cuda::launch_prefill_attention(p, nullptr), cudaErrorInvalidValue) << what;
    EXPECT_EQ(cuda::launch_decode_attention(p, nullptr), cudaErrorInvalidValue) << what;
  };
  p.head_dim = 256;
  rejects("head_dim 256");
  p.head_dim = 12;
  rejects("bf16 head_dim 12: not a multiple of 8");
  p.head_dim = 64;
  p.num_heads = 3;
  rejects("3 heads over 2 KV heads");
  p.num_heads = 4;
  p.block_size = 0;
  rejects("block_size 0");
  p.block_size = 16;
  p.dtype = DType::f16;
  rejects("f16");
  p.dtype = DType::bf16;
  p.kv_dtype = DType::f32;
  rejects("bf16 q with an f32 cache");
  p.kv_dtype = DType::fp8_e4m3;
  rejects("an fp8 cache without scales");
  p.key_scales = p.value_scales = buf.as<std::uint8_t>();
  p.dtype = DType::f32;
  rejects("f32 q with an fp8 cache");
  p.dtype = DType::bf16;
  p.head_dim = 24;
  rejects("an fp8 cache of head_dim 24: not a multiple of 16");
}

// An fp8 cache (bf16 q and out) against the reference reading the same codes and scales: the
// decode kernel for every head shape, with each workspace; the flash prefill kernel for head_dim
// 64 and 128 on a Hopper GPU, cudaErrorNotSupported for other shapes.
TEST_F(PagedAttentionKernel, Fp8CacheMatchesReference) {
  int major = 0;
  ASSERT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  for (const AttentionHeads& heads : kHeads) {
    for (std::int64_t bs : {1, 16, 256}) {
      const auto block = static_cast<std::int32_t>(bs);
      const std::int32_t prompt = random_len(2, 200);
      const std::vector<Sequence> decodes = {
          {1, 1}, {block + 1, 1}, {8192, 1}, {random_len(1, 3000), 1}, {block + 3, 0}};
      const std::vector<Sequence> prefills = {
          {block, block}, {1, 1}, {3 * block + 5, 7}, {2 * block + 1, 1}, {prompt + 3, prompt},
          {2000, 300}};
      PagedBatch d = make_batch(heads, bs, decodes, DType::bf16);
      test::quantize_cache(d);
      SCOPED_TRACE("fp8 " + test::describe(d, DType::bf16));
      const auto want_decode = run_cpu(d);
      for (Workspace workspace : {Workspace::wanted, Workspace::none})
        test::expect_close(run_gpu(Kernel::decode, d, DType::bf16, workspace), want_decode,
                           test::tolerance(DType::bf16),
                           std::string("decode kernel with ") + workspace_name(workspace));
      // The 8192-token sequence (token 2) with a block outside the cache: its output is NaN
      // (the block is never read); the others' still match the reference.
      PagedBatch bad = d;
      bad.block_tables[2 * bad.max_blocks_per_seq + 1] = static_cast<std::int32_t>(bad.num_blocks);
      const auto row = static_cast<std::ptrdiff_t>(heads.heads * heads.head_dim);
      std::vector<float> want_bad = want_decode;
      std::fill(want_bad.begin() + 2 * row, want_bad.begin() + 3 * row, std::nanf(""));
      test::expect_close(run_gpu(Kernel::decode, bad, DType::bf16), want_bad,
                         test::tolerance(DType::bf16), "a block outside the cache");

      // A long-context batch under half a wave with its total context given: an fp8 cache's
      // doubled, balanced splits (kernels/cuda/decode_plan.hpp), and each workspace.
      if (bs == 256) {
        std::vector<Sequence> tail;
        for (int i = 0; i < 16; ++i) tail.push_back({random_len(2048, 8704), 1});
        PagedBatch t = make_batch(heads, bs, tail, DType::bf16);
        test::quantize_cache(t);
        SCOPED_TRACE("fp8 long tail " + test::describe(t, DType::bf16));
        const auto want_tail = run_cpu(t);
        std::vector<std::int32_t> order(tail.size());
        std::iota(order.begin(), order.end(), 0);
        for (Workspace workspace : {Workspace::wanted, Workspace::half, Workspace::none})
          test::expect_close(run_gpu(Kernel::decode, t, DType::bf16, workspace, order), want_tail,
                             test::tolerance(DType::bf16),
                             std::string("decode kernel with ") + workspace_name(workspace));
      }

      PagedBatch b = make_batch(heads, bs, prefills, DType::bf16);
      test::quantize_cache(b);
      SCOPED_TRACE("fp8 " + test::describe(b, DType::bf16));
      if (major == 9 && (heads.head_dim == 64 || heads.head_dim == 128)) {
        test::expect_close(run_gpu(Kernel::prefill, b, DType::bf16), run_cpu(b),
                           test::flash_tolerance(DType::bf16), "prefill kernel");
      } else {
        const test::DevicePagedBatch device(b, DType::bf16);
        const cuda::PagedAttentionParams p = device.params(b, DType::bf16);
        EXPECT_FALSE(cuda::prefill_attention_supported(p));
        EXPECT_EQ(cuda::launch_prefill_attention(p, nullptr), cudaErrorNotSupported);
      }
    }
  }
}

}  // namespace
}  // namespace minivllm
