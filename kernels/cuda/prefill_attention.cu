// Prefill attention over the paged KV cache. bf16 with head_dim 64 or 128 on a Hopper GPU runs the
// flash-attention kernel (wgmma; detail/flash_prefill.cuh, versions and figures in
// prefill_attention.md); everything else (f32, other head sizes, other GPUs) runs the generic
// kernel below: a block per (sequence, tile of 16 query rows, KV head), a row being one new token
// of one query head of the KV head's group, rows ordered token by token. Each warp takes 4 rows
// through all the keys they see, 32 at a time; the group's heads share each key read.
#include "kernels/cuda/detail/attention_warp.cuh"
#include "kernels/cuda/detail/flash_prefill.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace minivllm::cuda {
namespace {

using namespace detail;

constexpr int kWarps = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;

template <class T>
__global__ void __launch_bounds__(kWarps * 32) prefill_attention_kernel(PagedAttentionParams p) {
  __shared__ __align__(16) float q_smem[kWarps][kRowsPerWarp * kMaxHeadDim];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t seq = blockIdx.x, kv_head = blockIdx.z;
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  const std::int32_t first_token = p.query_start[seq];
  const std::int32_t query_len = p.query_start[seq + 1] - first_token;
  const std::int32_t context_len = p.context_lens[seq];
  const std::int64_t num_rows = query_len > 0 ? query_len * group : 0;
  const std::int64_t first_row = (blockIdx.y * std::int64_t{kWarps} + warp) * kRowsPerWarp;
  if (first_row >= num_rows) return;  // whole warps; the kernel has no block-wide barrier
  const bool valid = valid_ranges(query_len, context_len, p);
  const int head_dim = static_cast<int>(p.head_dim);

  // Row r: its position (-1: none, or the sequence is invalid) and where its q and out start.
  const T* q = static_cast<const T*>(p.q);
  float* q_rows = q_smem[warp];
  std::int32_t row_pos[kRowsPerWarp];
  std::int64_t row_offset[kRowsPerWarp];
  std::int32_t num_keys = 0;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const std::int64_t row = first_row + r;
    row_pos[r] = -1;
    row_offset[r] = -1;
    if (row < num_rows) {
      const std::int64_t i = row / group, head = kv_head * group + row % group;
      row_offset[r] = ((first_token + i) * p.num_heads + head) * head_dim;
      if (valid) row_pos[r] = static_cast<std::int32_t>(context_len - query_len + i);
    }
    num_keys = max(num_keys, row_pos[r] + 1);
    for (int d = lane; d < head_dim; d += 32)
      q_rows[r * head_dim + d] = row_offset[r] >= 0 ? to_float(q[row_offset[r] + d]) : 0.0f;
  }
  __syncwarp();

  const PagedKv<T> kv = paged_kv<T>(p, seq, kv_head);
  RowsState st;
  for (std::int32_t tile = 0; tile < num_keys; tile += kKeysPerTile)
    attend_key_tile(kv, q_rows, row_pos, tile, num_keys, p.scale, st);
  const bool bad = __any_sync(kFullWarp, st.bad || !valid);

  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (row_offset[r] < 0) continue;
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) {
      const int d = lane + 32 * j;
      if (d < head_dim)
        out[row_offset[r] + d] = from_float<T>(bad ? NAN : st.acc[r][j] / st.sum[r]);
    }
  }
}

}  // namespace

bool prefill_attention_supported(const PagedAttentionParams& p) {
  return p.kv_dtype != DType::fp8_e4m3 || flash::flash_prefill_supported(p);
}

namespace {
// Whether these shapes run the flash kernel (the shape checks alone: with no sequences
// check_attention_params skips the pointers).
bool flash_shapes(const PagedAttentionParams& p) {
  PagedAttentionParams shapes = p;
  shapes.num_seqs = 0;
  return p.num_seqs > 0 && p.max_query_len > 0 && check_attention_params(shapes) == cudaSuccess &&
         flash::flash_prefill_supported(p);
}
}  // namespace

std::size_t prefill_attention_workspace_bytes(const PagedAttentionParams& p) {
  return flash_shapes(p) ? flash::flash_prefill_workspace_bytes(p) : 0;
}

std::size_t prefill_attention_split_counters(const PagedAttentionParams& p) {
  return flash_shapes(p) ? flash::flash_prefill_split_counters(p) : 0;
}

cudaError_t launch_prefill_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (const cudaError_t err = check_attention_params(p); err != cudaSuccess) return err;
  if (p.num_seqs == 0 || p.max_query_len == 0) return cudaSuccess;
  if (flash::flash_prefill_supported(p)) return flash::launch_flash_prefill(p, stream);
  if (p.kv_dtype == DType::fp8_e4m3) return cudaErrorNotSupported;  // the flash kernel's only
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  const std::int64_t row_tiles = (p.max_query_len * group + kRowsPerBlock - 1) / kRowsPerBlock;
  if (row_tiles > kMaxGridYZ) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.num_seqs), static_cast<unsigned>(row_tiles),
                  static_cast<unsigned>(p.num_kv_heads));
  return dispatch_element_type(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    prefill_attention_kernel<T><<<grid, kWarps * 32, 0, stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
