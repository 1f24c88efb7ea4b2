// The decode kernel with the layer's attention inputs fused in (launch_decode_attention_with_
// inputs) against the two kernels it replaces (launch_attention_inputs, then
// launch_decode_attention, each checked against the CPU reference in its own test): the outputs
// and both whole caches must be the same bits, with splits and without, with padding sequences.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/layers.hpp>

#include "gpu_test_support.hpp"
#include "paged_attention_batch.hpp"

namespace minivllm {
namespace {

using test::DeviceBuffer;

struct Case {
  test::AttentionHeads heads;
  bool qk_norm;
  std::int64_t block_size;
  std::vector<std::int32_t> contexts;  // 0: a padding sequence (no new token)
};

std::vector<std::uint8_t> bytes_of(const DeviceBuffer& buf) {
  std::vector<std::uint8_t> out(buf.bytes());
  test::throw_on_cuda_error(cudaMemcpy(out.data(), buf.get(), out.size(), cudaMemcpyDeviceToHost),
                            "cudaMemcpy to host");
  return out;
}

std::vector<std::int32_t> repeated(std::int32_t context, std::size_t n) {
  return std::vector<std::int32_t>(n, context);
}

class DecodeAttentionInputsKernel : public test::CudaKernelTest {
 protected:
  void check(const Case& c, DType dtype) {
    const test::AttentionHeads& h = c.heads;
    std::vector<test::SequenceLens> seqs;
    for (std::int32_t context : c.contexts)
      seqs.push_back({context == 0 ? 1 : context, context == 0 ? 0 : 1});
    const test::PagedBatch b = test::make_paged_batch(h, c.block_size, seqs, dtype, rng());
    SCOPED_TRACE(test::describe(b, dtype) + (c.qk_norm ? " q/k norm" : ""));

    // Each new token at its sequence's last position, stored in the slot the table gives it.
    std::vector<std::int32_t> positions;
    std::vector<std::int64_t> slots;
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      if (seqs[s].query_len == 0) continue;
      const std::int32_t pos = seqs[s].context_len - 1;
      positions.push_back(pos);
      const std::int32_t block =
          b.block_tables[s * b.max_blocks_per_seq + pos / static_cast<std::int32_t>(b.block_size)];
      slots.push_back(std::int64_t{block} * b.block_size + pos % b.block_size);
    }
    const std::int64_t tokens = b.num_tokens;
    const std::int64_t qkv_width = (h.heads + 2 * h.kv_heads) * h.head_dim;
    const auto qkv = random_values(static_cast<std::size_t>(tokens * qkv_width), -2, 2, dtype);
    const auto q_norm = random_values(static_cast<std::size_t>(h.head_dim), 0.5f, 1.5f, dtype);
    const auto k_norm = random_values(static_cast<std::size_t>(h.head_dim), 0.5f, 1.5f, dtype);
    DeviceBuffer d_qkv = test::upload(qkv, dtype), d_q_norm = test::upload(q_norm, dtype),
                 d_k_norm = test::upload(k_norm, dtype);
    DeviceBuffer d_positions = test::upload_raw(positions), d_slots = test::upload_raw(slots);
    DeviceBuffer d_inv_freq = test::upload_raw(layers::rope_inverse_frequencies(h.head_dim, 1e6));

    // Two copies of the batch: one for the two kernels, one for the fused kernel.
    test::DevicePagedBatch separate(b, dtype), fused(b, dtype);
    const auto inputs_for = [&](test::DevicePagedBatch& d) {
      cuda::AttentionInputsParams p;
      p.dtype = dtype;
      p.qkv = d_qkv.get();
      p.q = d.q.get();
      p.key_cache = d.key_cache.get();
      p.value_cache = d.value_cache.get();
      p.positions = d_positions.as<std::int32_t>();
      p.slot_mapping = d_slots.as<std::int64_t>();
      p.inv_freq = d_inv_freq.as<float>();
      p.num_tokens = tokens;
      p.num_heads = h.heads;
      p.num_kv_heads = h.kv_heads;
      p.head_dim = h.head_dim;
      p.num_slots = b.num_blocks * b.block_size;
      if (c.qk_norm) {
        p.q_norm_weight = d_q_norm.get();
        p.k_norm_weight = d_k_norm.get();
        p.norm_eps = 1e-6f;
      }
      return p;
    };
    // The decode workspace as the engine gives it (enough for the most splits).
    const auto attention_for = [&](test::DevicePagedBatch& d, DeviceBuffer& workspace) {
      cuda::PagedAttentionParams p = d.params(b, dtype);
      p.workspace = workspace.get();
      p.workspace_bytes = workspace.bytes();
      return p;
    };
    cuda::PagedAttentionParams shapes = separate.params(b, dtype);
    const std::size_t workspace_bytes = cuda::decode_attention_workspace_bytes(shapes);
    DeviceBuffer separate_workspace(workspace_bytes), fused_workspace(workspace_bytes);

    const cuda::AttentionInputsParams separate_inputs = inputs_for(separate);
    ASSERT_CUDA(cuda::launch_attention_inputs(separate_inputs, nullptr));
    ASSERT_CUDA(cuda::launch_decode_attention(attention_for(separate, separate_workspace), nullptr));

    const cuda::AttentionInputsParams fused_inputs = inputs_for(fused);
    test::poison(fused.q);  // the fused kernel must not need it
    const cuda::PagedAttentionParams fused_attention = attention_for(fused, fused_workspace);
    ASSERT_TRUE(cuda::decode_attention_fuses_inputs(fused_attention, fused_inputs));
    ASSERT_CUDA(cuda::launch_decode_attention_with_inputs(fused_attention, fused_inputs, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());

    EXPECT_TRUE(bytes_of(separate.out) == bytes_of(fused.out)) << "outputs differ";
    EXPECT_TRUE(bytes_of(separate.key_cache) == bytes_of(fused.key_cache)) << "key caches differ";
    EXPECT_TRUE(bytes_of(separate.value_cache) == bytes_of(fused.value_cache))
        << "value caches differ";
    // And the separate kernels' result is the CPU reference's (the caches as they wrote them).
    test::PagedBatch stored = b;
    const std::size_t cache_size = stored.key_cache.size();
    stored.key_cache = test::download(separate.key_cache, dtype, cache_size);
    stored.value_cache = test::download(separate.value_cache, dtype, cache_size);
    stored.q = test::download(separate.q, dtype, b.out_size());
    test::expect_close(test::download(fused.out, dtype, b.out_size()),
                       test::paged_attention_reference(stored), test::tolerance(dtype),
                       "fused decode against the CPU reference");
  }
};

const test::AttentionHeads kQwen3{"Qwen3-0.6B", 16, 8, 128};
const test::AttentionHeads kLlama32{"Llama-3.2-1B", 32, 8, 64};
const test::AttentionHeads kGroupOne{"group 1", 4, 4, 128};

TEST_F(DecodeAttentionInputsKernel, SameBitsAsSeparateKernels) {
  std::vector<std::int32_t> ragged;  // more sequences than one wave needs: one split each
  for (int i = 0; i < 80; ++i) ragged.push_back(static_cast<std::int32_t>(random_int(1, 700)));
  ragged[5] = 0;
  const Case cases[] = {
      {kQwen3, true, 16, {1}},                 // a one-token context
      {kQwen3, true, 16, {1000}},              // one sequence, many splits
      {kQwen3, true, 256, {37, 0, 2049, 600}},  // splits, a padding sequence
      {kQwen3, true, 256, repeated(300, 70)},
      {kQwen3, true, 16, ragged},
      {kLlama32, false, 16, {513, 90, 0, 4}},  // group 4, no norm, head_dim 64
      {kGroupOne, true, 32, {200, 1, 64}},
  };
  for (const Case& c : cases)
    for (DType dtype : test::kElementTypes) {
      check(c, dtype);
      if (HasFatalFailure()) return;
    }
}

// Which shapes fuse (decode_attention_fuses_inputs reads shapes and pointers only: these are
// never dereferenced).
TEST(DecodeAttentionInputsFuses, OnlyMatchingShapesOfPowerOfTwoPieces) {
  const auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  cuda::PagedAttentionParams p;
  p.dtype = DType::bf16;
  p.num_heads = 16;
  p.num_kv_heads = 8;
  p.head_dim = 128;
  p.key_cache = fake(0x10000);
  p.value_cache = fake(0x20000);
  cuda::AttentionInputsParams in;
  in.dtype = DType::bf16;
  in.num_heads = 16;
  in.num_kv_heads = 8;
  in.head_dim = 128;
  in.qkv = fake(0x30000);
  in.key_cache = fake(0x10000);
  in.value_cache = fake(0x20000);
  in.positions = static_cast<const std::int32_t*>(fake(0x40000));
  in.slot_mapping = static_cast<const std::int64_t*>(fake(0x50000));
  in.inv_freq = static_cast<const float*>(fake(0x60000));
  EXPECT_TRUE(cuda::decode_attention_fuses_inputs(p, in));

  auto head_dim_96 = std::pair{p, in};  // 12 pieces of 16 bytes: not a power of two
  head_dim_96.first.head_dim = head_dim_96.second.head_dim = 96;
  EXPECT_FALSE(cuda::decode_attention_fuses_inputs(head_dim_96.first, head_dim_96.second));
  EXPECT_EQ(cuda::launch_decode_attention_with_inputs(head_dim_96.first, head_dim_96.second,
                                                      nullptr),
            cudaErrorInvalidValue);
  auto other_heads = in;
  other_heads.num_heads = 8;
  EXPECT_FALSE(cuda::decode_attention_fuses_inputs(p, other_heads));
  auto other_cache = in;
  other_cache.key_cache = fake(0x70000);
  EXPECT_FALSE(cuda::decode_attention_fuses_inputs(p, other_cache));
  auto unaligned = in;
  unaligned.qkv = fake(0x30008);
  EXPECT_FALSE(cuda::decode_attention_fuses_inputs(p, unaligned));
  auto other_dtype = in;
  other_dtype.dtype = DType::f32;
  EXPECT_FALSE(cuda::decode_attention_fuses_inputs(p, other_dtype));
}

}  // namespace
}  // namespace minivllm
