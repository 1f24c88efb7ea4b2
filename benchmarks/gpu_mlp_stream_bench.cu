// The first step of a streaming decode path for one row (issue 30; docs/engine-speed.md, "one
// stream"): can a persistent kernel run a decode layer's MLP half faster than today's four
// kernels, by having each multiprocessor request its share of all three weight matrices at once
// into shared memory and then only wait on its two grid barriers?
//
// The MLP half at one row, Qwen3-0.6B's shapes (hidden 1024, attention output 2048,
// intermediate 3072): o = x W_o^T; residual += o; n = rms_norm(residual); a = silu(n W_gate^T) *
// (n W_up^T); y = a W_down^T. 22 MB of bf16 weights a layer; each of 28 layers has its own
// copies (616 MB), so they come from HBM.
//   chain        today's kernels in a CUDA graph: skinny GEMM, add_rms_norm, the skinny GEMM
//                with silu in its epilogue, skinny GEMM (each with dependent launch);
//   persistent, a launch a layer: one 512-thread block per multiprocessor has one thread ask
//                for its rows of W_o, of W_gate / W_up and of W_down (~190 KB of shared memory)
//                as bulk copies (cp.async.bulk), each matrix completing on its own mbarrier;
//                then it computes o, its rows of the residual; a grid barrier; the norm (each
//                block over the whole residual) and its gate/up rows; a barrier; its rows of y.
//                The barrier: a 64-bit arrival counter in global memory that only grows (each
//                barrier waits for the next multiple of the grid);
//   persistent, one launch: the same kernel over all 28 layers, each block asking for the next
//                layer's rows of a matrix as soon as its warps are done with that matrix, so the
//                weight stream runs on under the barriers and from layer to layer;
//   ... layer 0's weights kept: the one launch with no weight stream after the first layer
//                (timing only: the chain of phases and barriers alone).
// The paths are checked against a CPU reference of one layer on fresh random inputs and over 28
// layers against the chain; then us per layer (median of 15 replays of a 28-layer graph after 3
// warm-ups) and the weights' GB/s.
// Prints a table and one JSON line.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "benchmarks/gpu_mbarrier.cuh"
#include "kernels/bf16.hpp"
#include "kernels/cuda/detail/silu.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/skinny_gemm.cuh"

namespace {

using minivllm::DType;
using minivllm::bench::check;
using minivllm::bench::DeviceMemory;
using minivllm::bench::median_ms;
using minivllm::bench::smem_address;
using minivllm::bench::wait_parity;
using namespace minivllm::cuda::detail;
namespace cuda = minivllm::cuda;

constexpr int kHidden = 1024, kAttn = 2048, kInter = 3072, kLayers = 28;
constexpr float kEps = 1e-6f;
constexpr int kThreads = 512, kWarps = kThreads / 32;
constexpr int kMinBlocks = 128;  // at most ceil(1024 / 128) = 8 rows of W_o and W_down a block
constexpr int kMaxRows = (kHidden + kMinBlocks - 1) / kMinBlocks;
constexpr int kMaxPairs = (kInter + kMinBlocks - 1) / kMinBlocks;  // gate/up row pairs
constexpr std::size_t kSharedBytes =
    sizeof(__nv_bfloat16) *
        (std::size_t{kMaxRows} * kAttn + 2 * std::size_t{kMaxPairs} * kHidden +
         std::size_t{kMaxRows} * kInter) +
    sizeof(float) * (kInter + kWarps) + 3 * 8;

struct Weights {
  const __nv_bfloat16* w_o;     // [layers][hidden][attn]
  const __nv_bfloat16* w_gu;    // [layers][2 inter][hidden], gate rows first
  const __nv_bfloat16* w_down;  // [layers][hidden][inter]
  const __nv_bfloat16* norm;    // [hidden]
};

struct Activations {
  const __nv_bfloat16* x;   // [attn], the attention's output
  __nv_bfloat16* residual;  // [hidden], updated
  __nv_bfloat16* a;         // [inter], the gated activation (between the blocks)
  __nv_bfloat16* y;         // [hidden]
  unsigned long long* arrivals;
};

__device__ __forceinline__ float bf16_round(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

// A row of bf16 weights in shared memory . a vector of floats in shared memory, by one warp.
template <int kIn>
__device__ __forceinline__ float warp_dot(const __nv_bfloat16* row, const float* v) {
  const int lane = threadIdx.x % 32;
  float sum = 0.0f;
#pragma unroll
  for (int c = lane; c < kIn / 8; c += 32) {
    const uint4 raw = reinterpret_cast<const uint4*>(row)[c];
    const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      sum = fmaf(__uint_as_float(words[k] << 16), v[8 * c + 2 * k], sum);
      sum = fmaf(__uint_as_float(words[k] & 0xFFFF0000u), v[8 * c + 2 * k + 1], sum);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
  return sum;
}

// Every block of the grid has arrived here (and its writes are visible) before any goes on.
__device__ __forceinline__ void grid_barrier(unsigned long long* arrivals) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long ticket;
    asm volatile("atom.add.release.gpu.u64 %0, [%1], 1;" : "=l"(ticket) : "l"(arrivals) : "memory");
    const unsigned long long target = (ticket / gridDim.x + 1) * gridDim.x;
    unsigned long long seen;
    // Every block is resident (one per multiprocessor, checked on the host); a barrier that
    // still waits after ~2^28 polls is a bug: trap rather than hang the device.
    for (unsigned polls = 0;; ++polls) {
      asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(seen) : "l"(arrivals) : "memory");
      if (seen >= target) break;
      if (polls == (1u << 28)) __trap();
    }
  }
  __syncthreads();
}

// Copies `bytes` (a multiple of 16) from global to shared memory as bulk copies issued by the
// calling thread, completing on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, int bytes, std::uint32_t bar) {
  constexpr int kPiece = 16 << 10;
  for (int done = 0; done < bytes; done += kPiece) {
    const int piece = bytes - done < kPiece ? bytes - done : kPiece;
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(smem_address(static_cast<char*>(dst) + done)),
        "l"(static_cast<const char*>(src) + done), "r"(piece), "r"(bar)
        : "memory");
  }
}

// Layers [first, first + count)'s MLP halves at one row (see the top of the file). A block asks
// for its rows of every matrix of the first layer at once, and for each matrix of the next layer
// as soon as its own warps are done with that matrix's shared memory.
// Each matrix comes as bulk copies that one thread issues, completing on the matrix's mbarrier.
// stream = false (timing only): the first layer's weights stay and serve every layer, which
// leaves the kernel's chain of phases and barriers without its weight stream.
__global__ void __launch_bounds__(kThreads, 1)
    mlp_stream_kernel(Weights w, Activations act, int first, int count, bool stream) {
  extern __shared__ __align__(16) unsigned char shared[];
  auto* s_o = reinterpret_cast<__nv_bfloat16*>(shared);
  __nv_bfloat16* s_gate = s_o + kMaxRows * kAttn;
  __nv_bfloat16* s_up = s_gate + kMaxPairs * kHidden;
  __nv_bfloat16* s_down = s_up + kMaxPairs * kHidden;
  auto* s_vec = reinterpret_cast<float*>(s_down + kMaxRows * kInter);
  float* s_partial = s_vec + kInter;
  auto* bars = reinterpret_cast<unsigned long long*>(s_partial + kWarps);  // o, gate/up, down
  const int b = blockIdx.x, blocks = gridDim.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = b * kHidden / blocks, row1 = (b + 1) * kHidden / blocks;
  const int pair0 = b * kInter / blocks, pair1 = (b + 1) * kInter / blocks;
  const int end = first + count;
  if (threadIdx.x == 0) {
    for (int i = 0; i < 3; ++i)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(bars + i)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  // A layer's matrix: thread 0's bulk copies on the matrix's mbarrier (nothing past the last
  // layer); every thread waits for the phase of its layer.
  const auto has_copies = [&](int layer) { return layer < end && (stream || layer == first); };
  const auto request = [&](int matrix, int layer, auto copy) {
    if (!has_copies(layer) || threadIdx.x != 0) return;
    const std::uint32_t bar = smem_address(bars + matrix);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    int bytes = 0;
    copy([&](void*, const void*, int n) { bytes += n; });
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
    copy([&](void* dst, const void* src, int n) { bulk_copy(dst, src, n, bar); });
  };
  const auto await = [&](int matrix, int layer) {
    if (has_copies(layer))
      wait_parity(smem_address(bars + matrix), static_cast<std::uint32_t>(layer - first) & 1);
  };
  const auto request_o = [&](int layer) {
    request(0, layer, [&](auto put) {
      put(s_o, w.w_o + (static_cast<std::size_t>(layer) * kHidden + row0) * kAttn,
          (row1 - row0) * kAttn * 2);
    });
  };
  const auto request_gate_up = [&](int layer) {
    request(1, layer, [&](auto put) {
      const __nv_bfloat16* gu = w.w_gu + static_cast<std::size_t>(layer) * 2 * kInter * kHidden;
      put(s_gate, gu + static_cast<std::size_t>(pair0) * kHidden, (pair1 - pair0) * kHidden * 2);
      put(s_up, gu + (std::size_t{kInter} + pair0) * kHidden, (pair1 - pair0) * kHidden * 2);
    });
  };
  const auto request_down = [&](int layer) {
    request(2, layer, [&](auto put) {
      put(s_down, w.w_down + (static_cast<std::size_t>(layer) * kHidden + row0) * kInter,
          (row1 - row0) * kInter * 2);
    });
  };
  request_o(first);
  request_gate_up(first);
  request_down(first);

  for (int layer = first; layer < end; ++layer) {
    // o for this block's rows, and the residual's.
    for (int i = threadIdx.x; i < kAttn; i += kThreads) s_vec[i] = __bfloat162float(act.x[i]);
    await(0, layer);
    __syncthreads();
    for (int r = warp; r < row1 - row0; r += kWarps) {
      const float o = bf16_round(warp_dot<kAttn>(s_o + r * kAttn, s_vec));
      if (lane == 0) {
        const float res = __bfloat162float(__ldcg(act.residual + row0 + r));
        act.residual[row0 + r] = __float2bfloat16(res + o);
      }
    }
    __syncthreads();
    request_o(layer + 1);
    grid_barrier(act.arrivals);

    // The norm over the whole residual (each block), then this block's gate/up pairs.
    float squares = 0.0f;
    for (int i = threadIdx.x; i < kHidden; i += kThreads) {
      const float v = __bfloat162float(__ldcg(act.residual + i));
      s_vec[i] = v;
      squares += v * v;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      squares += __shfl_xor_sync(0xFFFFFFFFu, squares, offset);
    if (lane == 0) s_partial[warp] = squares;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) total += s_partial[i];
    const float inv_rms = rsqrtf(total / kHidden + kEps);
    for (int i = threadIdx.x; i < kHidden; i += kThreads)
      s_vec[i] = bf16_round(__bfloat162float(w.norm[i]) * bf16_round(s_vec[i] * inv_rms));
    await(1, layer);
    __syncthreads();
    for (int j = warp; j < pair1 - pair0; j += kWarps) {
      const float gate = bf16_round(warp_dot<kHidden>(s_gate + j * kHidden, s_vec));
      const float up = bf16_round(warp_dot<kHidden>(s_up + j * kHidden, s_vec));
      if (lane == 0) act.a[pair0 + j] = __float2bfloat16(silu_times(gate, up));
    }
    __syncthreads();
    request_gate_up(layer + 1);
    grid_barrier(act.arrivals);

    // This block's rows of y. (The next layer's o rewrites the residual only after every block
    // passed the barrier above, so after every block's norm read it.)
    for (int i = threadIdx.x; i < kInter; i += kThreads)
      s_vec[i] = __bfloat162float(__ldcg(act.a + i));
    await(2, layer);
    __syncthreads();
    for (int r = warp; r < row1 - row0; r += kWarps) {
      const float y = warp_dot<kInter>(s_down + r * kInter, s_vec);
      if (lane == 0) act.y[row0 + r] = __float2bfloat16(y);
    }
    __syncthreads();
    request_down(layer + 1);
  }
}

// Fills n bf16 values on the device with uniform(-scale, scale) from a counter-based hash.
__global__ void fill_kernel(__nv_bfloat16* out, std::size_t n, float scale, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    out[i] = __float2bfloat16(scale * (static_cast<float>(h & 0xFFFFFF) / 8388608.0f - 1.0f));
  }
}

std::vector<float> to_host(const __nv_bfloat16* d, std::size_t n) {
  std::vector<std::uint16_t> raw(n);
  check(cudaMemcpy(raw.data(), d, n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = minivllm::bf16_to_f32(raw[i]);
  return out;
}

float round_bf16(float v) { return minivllm::bf16_to_f32(minivllm::f32_to_bf16(v)); }

// Layer 0's MLP half on the CPU, in the GPU paths' roundings; returns y and updates residual.
std::vector<float> reference(const std::vector<float>& w_o, const std::vector<float>& w_gu,
                             const std::vector<float>& w_down, const std::vector<float>& norm,
                             const std::vector<float>& x, std::vector<float>& residual,
                             std::vector<float>& a) {
  const auto dot = [](const float* row, const float* v, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += static_cast<double>(row[i]) * v[i];
    return static_cast<float>(sum);
  };
  double squares = 0.0;
  for (int r = 0; r < kHidden; ++r) {
    residual[r] = round_bf16(residual[r] + round_bf16(dot(&w_o[static_cast<std::size_t>(r) * kAttn], x.data(), kAttn)));
    squares += static_cast<double>(residual[r]) * residual[r];
  }
  const float inv_rms = 1.0f / std::sqrt(static_cast<float>(squares / kHidden) + kEps);
  std::vector<float> n(kHidden), y(kHidden);
  a.assign(kInter, 0.0f);
  for (int i = 0; i < kHidden; ++i) n[i] = round_bf16(norm[i] * round_bf16(residual[i] * inv_rms));
  for (int j = 0; j < kInter; ++j) {
    const float gate = round_bf16(dot(&w_gu[static_cast<std::size_t>(j) * kHidden], n.data(), kHidden));
    const float up = round_bf16(dot(&w_gu[(std::size_t{kInter} + j) * kHidden], n.data(), kHidden));
    a[j] = round_bf16(gate / (1.0f + std::exp(-gate)) * up);
  }
  for (int r = 0; r < kHidden; ++r)
    y[r] = round_bf16(dot(&w_down[static_cast<std::size_t>(r) * kInter], a.data(), kInter));
  return y;
}

// max |got - want| over max |want|.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
  }
  return diff / std::max(scale, 1e-30);
}

}  // namespace

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::printf("gpu_mlp_stream_bench: skipped, no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int blocks = prop.multiProcessorCount;
  if (blocks < kMinBlocks) {
    std::printf("gpu_mlp_stream_bench: skipped, %d multiprocessors (needs %d)\n", blocks, kMinBlocks);
    return 0;
  }
  check(cudaFuncSetAttribute(mlp_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kSharedBytes)),
        "cudaFuncSetAttribute");
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mlp_stream_kernel, kThreads,
                                                      kSharedBytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (per_sm < 1) {
    std::fprintf(stderr, "gpu_mlp_stream_bench: the persistent kernel does not fit on an SM\n");
    return 1;
  }

  const std::size_t o_elems = std::size_t{kHidden} * kAttn, gu_elems = 2 * std::size_t{kInter} * kHidden,
                    down_elems = std::size_t{kHidden} * kInter;
  DeviceMemory w_o(kLayers * o_elems * 2), w_gu(kLayers * gu_elems * 2),
      w_down(kLayers * down_elems * 2), norm(kHidden * 2), x(kAttn * 2), residual(kHidden * 2),
      residual0(kHidden * 2), n(kHidden * 2), o(kHidden * 2), a(kInter * 2), y(kHidden * 2),
      arrivals(8);
  const auto bf = [](const DeviceMemory& m) { return reinterpret_cast<__nv_bfloat16*>(m.get()); };
  std::random_device seed_source;
  const auto fill = [&](const DeviceMemory& m, std::size_t count, float scale) {
    fill_kernel<<<1024, 256>>>(bf(m), count, scale, seed_source());
    check(cudaGetLastError(), "fill_kernel");
  };
  fill(w_o, kLayers * o_elems, 0.03f);
  fill(w_gu, kLayers * gu_elems, 0.05f);
  fill(w_down, kLayers * down_elems, 0.03f);
  fill(norm, kHidden, 1.0f);
  fill(x, kAttn, 1.0f);
  fill(residual0, kHidden, 1.0f);
  check(cudaMemset(arrivals.get(), 0, 8), "cudaMemset");
  check(cudaDeviceSynchronize(), "fill");

  const Weights weights{bf(w_o), bf(w_gu), bf(w_down), bf(norm)};
  const Activations act{bf(x), bf(residual), bf(a), bf(y),
                        reinterpret_cast<unsigned long long*>(arrivals.get())};
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const auto chain_layer = [&](int l) {
    check(cuda::launch_skinny_gemm(bf(x), bf(w_o) + l * o_elems, DType::bf16, bf(o), 1, kHidden,
                                   kAttn, stream),
          "launch_skinny_gemm o");
    check(cuda::launch_add_rms_norm(DType::bf16, bf(o), bf(residual), bf(norm), bf(n), 1, kHidden,
                                    kEps, stream),
          "launch_add_rms_norm");
    check(cuda::launch_skinny_gemm_silu_and_mul(bf(n), bf(w_gu) + l * gu_elems, bf(a), 1, kInter,
                                                kHidden, stream),
          "launch_skinny_gemm_silu_and_mul");
    check(cuda::launch_skinny_gemm(bf(a), bf(w_down) + l * down_elems, DType::bf16, bf(y), 1,
                                   kHidden, kInter, stream),
          "launch_skinny_gemm down");
  };
  // The persistent kernel a launch a layer, or every layer in the launch for layer 0.
  const auto persistent = [&](bool per_layer, bool stream_weights) {
    return [&, per_layer, stream_weights](int l) {
      if (!per_layer && l != 0) return;
      mlp_stream_kernel<<<blocks, kThreads, kSharedBytes, stream>>>(
          weights, act, l, per_layer ? 1 : kLayers, stream_weights);
      check(cudaGetLastError(), "mlp_stream_kernel");
    };
  };

  // Correctness: layer 0 from the same residual, each path against the CPU.
  std::vector<float> want_residual = to_host(bf(residual0), kHidden), want_a;
  const std::vector<float> want_y =
      reference(to_host(bf(w_o), o_elems), to_host(bf(w_gu), gu_elems),
                to_host(bf(w_down), down_elems), to_host(bf(norm), kHidden),
                to_host(bf(x), kAttn), want_residual, want_a);
  struct Path {
    const char* name;
    std::function<void(int)> layer;  // queues layer l's work (or, called with 0, every layer's)
    bool per_layer;                  // layer(0) alone runs layer 0 only: checked against the CPU
    bool checked = true;             // false: timing only (its math is not the model's)
    double a_error = -1, y_error = -1, residual_error = -1, y_error_28 = -1,
           residual_error_28 = -1, us = 0;
  };
  std::vector<Path> paths{{"chain", chain_layer, true},
                          {"persistent, a launch a layer", persistent(true, true), true},
                          {"persistent, one launch", persistent(false, true), false},
                          {"persistent, one launch, layer 0's weights kept (no stream)",
                           persistent(false, false), false, false}};
  bool ok = true;
  const auto run_from_start = [&](const Path& path, int layers) {
    check(cudaMemcpy(residual.get(), residual0.get(), kHidden * 2, cudaMemcpyDeviceToDevice),
          "cudaMemcpy");
    for (int l = 0; l < layers; ++l) path.layer(l);
    check(cudaStreamSynchronize(stream), path.name);
  };
  for (Path& path : paths) {
    if (!path.per_layer) continue;
    run_from_start(path, 1);
    path.a_error = relative_error(to_host(bf(a), kInter), want_a);
    path.y_error = relative_error(to_host(bf(y), kHidden), want_y);
    path.residual_error = relative_error(to_host(bf(residual), kHidden), want_residual);
    ok &= path.a_error < 2e-2 && path.y_error < 2e-2 && path.residual_error < 1e-2;
  }
  // Every layer: each path against the chain (whose kernels have their own CPU references).
  run_from_start(paths[0], kLayers);
  const std::vector<float> chain_y = to_host(bf(y), kHidden);
  const std::vector<float> chain_residual = to_host(bf(residual), kHidden);
  for (Path& path : paths) {
    if (!path.checked) continue;
    run_from_start(path, kLayers);
    path.y_error_28 = relative_error(to_host(bf(y), kHidden), chain_y);
    path.residual_error_28 = relative_error(to_host(bf(residual), kHidden), chain_residual);
    ok &= path.y_error_28 < 3e-2 && path.residual_error_28 < 2e-2;
  }

  // Speed: a graph of every layer, replayed.
  for (Path& path : paths) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    for (int l = 0; l < kLayers; ++l) path.layer(l);
    check(cudaStreamEndCapture(stream, &graph), "capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    // Replayed on the default stream, where median_ms records its events.
    const float ms = median_ms(3, 15, [&] { check(cudaGraphLaunch(exec, 0), "cudaGraphLaunch"); });
    path.us = ms * 1e3 / kLayers;
    check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
    check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  }
  check(cudaDeviceSynchronize(), "replays");

  const double layer_bytes = 2.0 * static_cast<double>(o_elems + gu_elems + down_elems);
  std::printf("MLP half of a decode layer at one row, Qwen3-0.6B shapes, %d layers' weights "
              "(%.1f MB a layer), %s, %d blocks x %d threads, %zu B shared\n",
              kLayers, layer_bytes / 1e6, prop.name, blocks, kThreads, kSharedBytes);
  std::printf("| path | us a layer | weights GB/s | layer 0 against the CPU: a, y, residual | "
              "28 layers against the chain: y, residual |\n|---|---|---|---|---|\n");
  std::string json = "{\"bench\":\"gpu_mlp_stream\",\"device\":\"" + std::string(prop.name) + "\",\"paths\":[";
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const Path& p = paths[i];
    std::printf("| %s | %.2f | %.0f | %.1e, %.1e, %.1e | %.1e, %.1e |\n", p.name, p.us,
                layer_bytes / (p.us * 1e3), p.a_error, p.y_error, p.residual_error, p.y_error_28,
                p.residual_error_28);
    json += std::string(i ? "," : "") + "{\"path\":\"" + p.name + "\",\"us_per_layer\":" +
            std::to_string(p.us) + ",\"a_error\":" + std::to_string(p.a_error) +
            ",\"y_error\":" + std::to_string(p.y_error) +
            ",\"residual_error\":" + std::to_string(p.residual_error) +
            ",\"y_error_28\":" + std::to_string(p.y_error_28) +
            ",\"residual_error_28\":" + std::to_string(p.residual_error_28) + "}";
  }
  std::printf("%s]}\n", json.c_str());
  if (!ok) std::fprintf(stderr, "gpu_mlp_stream_bench: a path disagrees with the CPU reference\n");
  return ok ? 0 : 1;
}
