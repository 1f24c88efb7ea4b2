#pragma once
// Causal attention over the paged KV cache on the GPU: the same computation and layouts as
// kernels/cpu/attention.hpp, in two kernels. Prefill handles any batch (new tokens of a sequence
// attend to its cached prefix and to themselves: prompts, chunked prefill, prefix-cache hits, and
// one-token sequences mixed in); decode is for batches where every sequence has one new token.
// The new tokens' keys and values must already be in the cache (launch_attention_inputs).
// Grouped-query attention: query head h reads KV head h / (num_heads / num_kv_heads).
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda {

struct PagedAttentionParams {
  DType dtype = DType::bf16;            // of q and out (bf16 or f32)
  // Of the caches: dtype, or fp8_e4m3 with bf16 q and out (e4m3 codes; a scale per slot and KV
  // head in key_scales / value_scales, e8m0 [num_blocks, num_kv_heads, block_size]:
  // kernels/fp8_scales.hpp). Decode converts the codes in registers and applies the scales to
  // the scores and probabilities; prefill takes the flash kernel only.
  DType kv_dtype = DType::bf16;
  const std::uint8_t* key_scales = nullptr;
  const std::uint8_t* value_scales = nullptr;
  const void* q = nullptr;              // [num_tokens, num_heads, head_dim]
  const void* key_cache = nullptr;      // [num_blocks, block_size, num_kv_heads, head_dim]
  const void* value_cache = nullptr;    // same layout
  const std::int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  const std::int32_t* query_start = nullptr;   // [num_seqs + 1]: the sequences' token ranges
  const std::int32_t* context_lens = nullptr;  // [num_seqs]: cached tokens incl. the new ones
  std::int64_t num_seqs = 0;
  // Most new tokens of any sequence (the host knows it from the batch): sizes the prefill grid,
  // so an understated value leaves later tokens' outputs unwritten.
  std::int64_t max_query_len = 0;
  std::int64_t max_blocks_per_seq = 0;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 0;    // 1 .. 256 and beyond
  std::int64_t num_heads = 0;     // a multiple of num_kv_heads
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;      // at most 128, a multiple of 16 bytes' worth of elements
  float scale = 1.0f;             // usually 1 / sqrt(head_dim)
  void* out = nullptr;            // [num_tokens, num_heads, head_dim]
  // Device scratch for the partial results of contexts split across blocks of threads (16-byte
  // aligned). Decode: decode_attention_workspace_bytes(params) of it; less (or null) gives fewer
  // splits. Prefill: prefill_attention_workspace_bytes(params), with split_counters; less (or
  // null) splits nothing. Either way the results stay right, only slower for long contexts in
  // small batches.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // Prefill only: split_counter_count zeroed ints on the device, which every launch leaves
  // zeroed; prefill_attention_split_counters(params) of them let it split.
  int* split_counters = nullptr;
  std::size_t split_counter_count = 0;
  // Decode only, optional: a permutation of 0..num_seqs-1, the order in which the kernel's
  // blocks (started in grid order) take the sequences. Longest context first keeps every
  // multiprocessor busy to the end of a batch of mixed lengths. Null: 0, 1, 2, ...
  const std::int32_t* seq_order = nullptr;
  // Decode only, optional: the sum of the sequences' context lengths (one value on the device).
  // A batch that fits in one wave of blocks then splits its longest contexts when the lengths
  // are uneven (the split length follows the total, so graphs stay valid).
  const std::int64_t* total_context = nullptr;
};

// New token i (0-based) of a sequence with query_len new tokens sits at position
// context_len - query_len + i and attends to positions 0..that position; softmax in fp32. All
// pointers on the device. Bad shapes give cudaErrorInvalidValue. A sequence whose ranges are
// invalid gets NaN outputs, and so do (at least) its tokens whose keys reach a block table entry
// outside the cache (the CPU reference throws for both); nothing outside the cache is read; the
// caller checks the batch on the host. bf16 with head_dim 64 or 128 on a Hopper GPU runs a
// flash-attention kernel (wgmma; softmax weights rounded to bf16 for P V), other shapes a generic
// one (prefill_attention.md). An fp8 cache needs the flash kernel (its shapes, a Hopper GPU):
// other shapes give cudaErrorNotSupported.
cudaError_t launch_prefill_attention(const PagedAttentionParams& params, cudaStream_t stream);
// Whether launch_prefill_attention takes these (checked) parameters' cache dtype and shapes: false
// only for an fp8 cache the flash kernel does not take.
bool prefill_attention_supported(const PagedAttentionParams& params);
// The workspace and split counters launch_prefill_attention wants for these shapes on the current
// device: 0 unless the flash kernel runs them in at most two waves of blocks, where it splits the
// keys of its longest query tiles across two blocks (the causal triangle otherwise leaves the
// launch waiting on its few longest tiles). Reads the shape fields of params only: the grid and
// the workspace follow the shapes, never the context lengths (a CUDA graph can replay it).
std::size_t prefill_attention_workspace_bytes(const PagedAttentionParams& params);
std::size_t prefill_attention_split_counters(const PagedAttentionParams& params);

// The same for a batch where every sequence has one new token, at index query_start[s]; a
// sequence with none is skipped (padding), one with more gets NaN there. Ignores max_query_len.
// Its grids depend on num_seqs, the head counts, max_blocks_per_seq * block_size, workspace_bytes
// and the device, never on the context lengths (so a CUDA graph can replay it).
cudaError_t launch_decode_attention(const PagedAttentionParams& params, cudaStream_t stream);

// The workspace launch_decode_attention wants for these shapes on the current device (0 when
// every sequence runs in one split); reads the shape fields of params only.
std::size_t decode_attention_workspace_bytes(const PagedAttentionParams& params);

}  // namespace minivllm::cuda
