// Decode attention over the paged KV cache: a block per (sequence, KV head, up to 4 heads of its
// group); the group's heads share each key read. The block's 8 warps split the context 32 keys at
// a time, each keeping its own online softmax, and merge at the end. Not tuned: a split-K kernel
// (several blocks per sequence for long contexts) replaces it later.
#include "kernels/cuda/detail/attention_warp.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace minivllm::cuda {
namespace {

using namespace detail;

constexpr int kWarps = 8;

template <class T>
__global__ void __launch_bounds__(kWarps * 32) decode_attention_kernel(PagedAttentionParams p) {
  __shared__ __align__(16) float q_rows[kRowsPerWarp * kMaxHeadDim];
  __shared__ float part_max[kWarps][kRowsPerWarp];
  __shared__ float part_sum[kWarps][kRowsPerWarp];
  __shared__ float part_acc[kWarps][kRowsPerWarp][kMaxHeadDim];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t seq = blockIdx.x, kv_head = blockIdx.y;
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  const std::int64_t first_group_head = blockIdx.z * std::int64_t{kRowsPerWarp};
  const std::int32_t token = p.query_start[seq];
  const std::int32_t query_len = p.query_start[seq + 1] - token;
  const std::int32_t context_len = p.context_lens[seq];
  if (query_len <= 0) return;  // no new token to write (the whole block)
  const bool valid = query_len == 1 && context_len >= 1 && valid_ranges(query_len, context_len, p);
  const int head_dim = static_cast<int>(p.head_dim);
  const int rows = static_cast<int>(min(std::int64_t{kRowsPerWarp}, group - first_group_head));
  // Row r is query head kv_head * group + first_group_head + r of the token.
  const std::int64_t out_offset =
      (std::int64_t{token} * p.num_heads + kv_head * group + first_group_head) * head_dim;

  const T* q = static_cast<const T*>(p.q);
  for (int i = threadIdx.x; i < kRowsPerWarp * head_dim; i += blockDim.x)
    q_rows[i] = i < rows * head_dim ? to_float(q[out_offset + i]) : 0.0f;
  __syncthreads();

  std::int32_t row_pos[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) row_pos[r] = valid && r < rows ? context_len - 1 : -1;
  const std::int32_t num_keys = valid ? context_len : 0;
  const PagedKv<T> kv = paged_kv<T>(p, seq, kv_head);
  RowsState st;
  for (std::int32_t tile = warp * kKeysPerTile; tile < num_keys; tile += kWarps * kKeysPerTile)
    attend_key_tile(kv, q_rows, row_pos, tile, num_keys, p.scale, st);

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (lane == 0) {
      part_max[warp][r] = st.max[r];
      part_sum[warp][r] = st.sum[r];
    }
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) {
      const int d = lane + 32 * j;
      if (d < head_dim) part_acc[warp][r][d] = st.acc[r][j];
    }
  }
  const bool bad = __syncthreads_or(st.bad || !valid);

  // Merge the warps' softmax states: a thread per (row, dim).
  T* out = static_cast<T*>(p.out);
  for (int i = threadIdx.x; i < rows * head_dim; i += blockDim.x) {
    const int r = i / head_dim, d = i % head_dim;
    float max_all = -INFINITY;
    for (int w = 0; w < kWarps; ++w) max_all = fmaxf(max_all, part_max[w][r]);
    float sum = 0.0f, acc = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (part_max[w][r] == -INFINITY) continue;  // the warp saw no key
      const float weight = expf(part_max[w][r] - max_all);
      sum += part_sum[w][r] * weight;
      acc += part_acc[w][r][d] * weight;
    }
    out[out_offset + i] = from_float<T>(bad ? NAN : acc / sum);
  }
}

}  // namespace

cudaError_t launch_decode_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (const cudaError_t err = check_attention_params(p); err != cudaSuccess) return err;
  if (p.num_seqs == 0) return cudaSuccess;
  const std::int64_t group = p.num_heads / p.num_kv_heads;
  const std::int64_t head_chunks = (group + kRowsPerWarp - 1) / kRowsPerWarp;
  if (head_chunks > kMaxGridYZ) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.num_seqs), static_cast<unsigned>(p.num_kv_heads),
                  static_cast<unsigned>(head_chunks));
  return dispatch_element_type(p.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    decode_attention_kernel<T><<<grid, kWarps * 32, 0, stream>>>(p);
    return cudaGetLastError();
  });
}

}  // namespace minivllm::cuda
