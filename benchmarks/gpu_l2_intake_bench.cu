// How fast can each SM take bytes into its shared memory, and does TMA multicast raise it?
// One block per SM streams a buffer through a ring of shared-memory stages with bulk copies
// (cp.async.bulk, or the GEMMs' 2-d swizzled tensor copies, completing on mbarriers); nothing
// reads the stages, so the figure is the copy path's intake alone. In clusters of C blocks, each
// block copies 1/C of every stage with .multicast::cluster, so every block still receives the
// whole stage while the L2 serves each byte once per cluster. A stage is refilled only after
// every block of the cluster has seen it complete (each block's consumer arrives on every peer's
// "empty" barrier). Then what moves one SM's intake: ring depth, stage and copy size, the
// consumer's hand-back, the lanes that issue the copies.
// Sources: an L2-resident buffer (warmed; each cluster starts at its own offset, or all at the
// same one) and an HBM-resident one (4 GiB, each launch starting further on). Prints a table and
// one JSON line per case. The question and its figures: kernels/cuda/tile_gemm.md ("What limits
// it"); the dated log: benchmarks/results/history/tile_gemm.md.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda.h>  // CUtensorMap and its enums only: the encoder comes through the runtime
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "benchmarks/gpu_mbarrier.cuh"

namespace {

using minivllm::bench::check;
using minivllm::bench::DeviceMemory;
using minivllm::bench::median_ms;
using minivllm::bench::smem_address;
using minivllm::bench::wait_parity;

constexpr int kMaxStages = 8;
constexpr int kBarrierBytes = 1024;  // the barriers, then the ring from this offset
// Every block asks for this much shared memory, so that no SM holds two of them.
constexpr int kBlockSmem = 200 * 1024;

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_size() {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

struct Stream {
  const char* src;
  std::uint64_t buffer_bytes;    // offsets wrap here
  std::uint64_t cluster_stride;  // where each cluster starts, past `start`
  std::uint64_t start;           // this launch's first offset
  int iterations;                // stages each block receives
  int stages;
  int stage_bytes;
  int piece_bytes;  // one bulk copy
  bool self_paced;  // no cluster: the producer waits for a stage's copies itself, no consumer
  bool tensor;      // 2-d tensor copies (the GEMMs' path: 128-byte rows, swizzled) for 1-d ones
  int issuers;      // lanes of the producer warp that issue a stage's copies
};

// Warp 0 fills the ring (lane 0 announces a stage's bytes, `issuers` lanes issue its copies);
// thread 32 waits for each stage and frees it cluster-wide (or, self paced, warp 0 refills a stage
// once its last copies have landed).
__global__ void __launch_bounds__(64, 1) intake_kernel(Stream s,
                                                      const __grid_constant__ CUtensorMap map) {
  extern __shared__ __align__(1024) unsigned char smem[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem);
  std::uint64_t* empty = full + kMaxStages;
  unsigned char* ring = smem + kBarrierBytes;
  const unsigned rank = cluster_rank();
  const unsigned csize = cluster_size();

  if (threadIdx.x == 0) {
    for (int i = 0; i < s.stages; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(full + i)));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(empty + i)),
                   "r"(csize));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_sync();

  // Running stage, phase and offset: no division in the loops, which a single issuing thread
  // would pay for on every stage.
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    const int pieces = s.stage_bytes / s.piece_bytes / static_cast<int>(csize);
    const int first_piece = static_cast<int>(rank) * pieces;
    const std::uint16_t mask = static_cast<std::uint16_t>((1u << csize) - 1);
    std::uint64_t offset = (s.start + (blockIdx.x / csize) * s.cluster_stride) % s.buffer_bytes;
    int stage = 0;
    std::uint32_t phase = 0;
    for (int i = 0; i < s.iterations; ++i) {
      if (i >= s.stages) {
        wait_parity(smem_address((s.self_paced ? full : empty) + stage), phase ^ 1);
      }
      const std::uint32_t bar = smem_address(full + stage);
      if (lane == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                     "r"(s.stage_bytes)
                     : "memory");
      }
      __syncwarp();
      for (int p = first_piece + lane; p < first_piece + pieces && lane < s.issuers;
           p += s.issuers) {
        const std::uint64_t from = offset + static_cast<std::uint64_t>(p) * s.piece_bytes;
        const char* src = s.src + from;
        const std::uint32_t dst = smem_address(ring + stage * s.stage_bytes + p * s.piece_bytes);
        const int row = static_cast<int>(from >> 7);  // 128-byte rows
        if (s.tensor && csize == 1) {
          asm volatile(
              "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
              "[%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
              "l"(&map), "r"(0), "r"(row), "r"(bar)
              : "memory");
        } else if (s.tensor) {
          asm volatile(
              "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
              ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
              "l"(&map), "r"(0), "r"(row), "r"(bar), "h"(mask)
              : "memory");
        } else if (csize == 1) {
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
              "[%0], [%1], %2, [%3];" ::"r"(dst),
              "l"(src), "r"(s.piece_bytes), "r"(bar)
              : "memory");
        } else {
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
              ".multicast::cluster [%0], [%1], %2, [%3], %4;" ::"r"(dst),
              "l"(src), "r"(s.piece_bytes), "r"(bar), "h"(mask)
              : "memory");
        }
      }
      offset += s.stage_bytes;
      if (offset >= s.buffer_bytes) offset -= s.buffer_bytes;
      if (++stage == s.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  } else if (threadIdx.x == 32 && !s.self_paced) {
    int stage = 0;
    std::uint32_t phase = 0;
    for (int i = 0; i < s.iterations; ++i) {
      wait_parity(smem_address(full + stage), phase);
      for (unsigned peer = 0; peer < csize; ++peer) {
        std::uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                     : "=r"(remote)
                     : "r"(smem_address(empty + stage)), "r"(peer));
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote)
                     : "memory");
      }
      if (++stage == s.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
  // Peers may still copy into this block's ring or arrive on its barriers until all are done.
  cluster_sync();
}

struct Case {
  std::string source;  // "l2" (distinct offsets), "l2-same" (every cluster the same) or "hbm"
  int blocks;
  int cluster;
  int stages;
  int stage_bytes;
  int piece_bytes;
  bool self_paced = false;
  bool tensor = false;
  int issuers = 1;
};

struct Buffers {
  const char* l2;
  std::uint64_t l2_bytes;
  const char* hbm;
  std::uint64_t hbm_bytes;
};

// A launch of `blocks` blocks in clusters of `cluster` (no cluster attribute for 1).
struct LaunchConfig {
  LaunchConfig(int blocks, int cluster) {
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(64);
    config.dynamicSmemBytes = kBlockSmem;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = cluster > 1 ? 1 : 0;
  }
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attribute{};
};

void launch(const Case& c, const Stream& stream, const CUtensorMap& map) {
  const LaunchConfig l(c.blocks, c.cluster);
  check(cudaLaunchKernelEx(&l.config, intake_kernel, stream, map), "cudaLaunchKernelEx");
}

// `bytes` at `base` as rows of 64 bf16 (128 bytes), copied in boxes of `box_rows` rows in the
// 128-byte swizzle, as the GEMMs' tensor maps.
CUtensorMap rows_map(const char* base, std::uint64_t bytes, int box_rows) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found),
        "cudaGetDriverEntryPointByVersion");
  if (found != cudaDriverEntryPointSuccess) check(cudaErrorNotSupported, "cuTensorMapEncodeTiled");
  const auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  const cuuint64_t dims[2] = {64, bytes / 128};
  const cuuint64_t strides[1] = {128};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map{};
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<char*>(base), dims, strides,
             box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    check(cudaErrorInvalidValue, "cuTensorMapEncodeTiled");
  return map;
}

// Clusters of `cluster` blocks (blocks, for 1) the device runs at once.
int resident_clusters(int cluster, int blocks, int sms) {
  if (cluster == 1) {
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, intake_kernel, 64, kBlockSmem),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return per_sm * sms;
  }
  const LaunchConfig l(blocks, cluster);
  int count = 0;
  check(cudaOccupancyMaxActiveClusters(&count, intake_kernel, &l.config),
        "cudaOccupancyMaxActiveClusters");
  return count;
}

void run(Case c, const Buffers& b, int sms) {
  c.blocks = c.blocks / c.cluster * c.cluster;  // whole clusters
  const int resident = resident_clusters(c.cluster, c.blocks, sms);
  c.blocks = std::min(c.blocks, resident * c.cluster);  // one wave: no block waits for an SM
  const int clusters = c.blocks / c.cluster;
  const bool hbm = c.source == "hbm";
  Stream s{};
  s.src = hbm ? b.hbm : b.l2;
  s.buffer_bytes = hbm ? b.hbm_bytes : b.l2_bytes;
  s.stages = c.stages;
  s.stage_bytes = c.stage_bytes;
  s.piece_bytes = c.piece_bytes;
  s.self_paced = c.self_paced;
  s.tensor = c.tensor;
  s.issuers = c.issuers;
  const CUtensorMap map = rows_map(s.src, s.buffer_bytes, c.piece_bytes / 128);
  s.iterations = hbm ? 256 : 2048;
  const std::uint64_t per_launch = std::uint64_t{static_cast<unsigned>(s.iterations)} *
                                   static_cast<unsigned>(s.stage_bytes);
  // Each cluster on its own stretch of the buffer (whole stages), or all on one for "l2-same".
  s.cluster_stride = c.source == "l2-same"
                         ? 0
                         : s.buffer_bytes / clusters / s.stage_bytes * s.stage_bytes;
  const float ms = median_ms(3, 9, [&](int i) {
    // From HBM each launch starts past what the last one read, so nothing is left in the L2.
    s.start = hbm ? (std::uint64_t{static_cast<unsigned>(i)} * per_launch * clusters) %
                        s.buffer_bytes
                  : 0;
    launch(c, s, map);
  });
  check(cudaGetLastError(), "intake_kernel");
  const double per_sm = static_cast<double>(per_launch) / (ms * 1e-3) / 1e9;
  const double delivered = per_sm * c.blocks;
  const double from_memory = delivered / c.cluster;
  std::printf("| %s | %d | %d | %d x %d KB | %d KB %s | %s x %d | %.1f | %.1f | %.1f | %.3f |\n",
              c.source.c_str(), c.blocks, c.cluster, c.stages, c.stage_bytes / 1024,
              c.piece_bytes / 1024, c.tensor ? "2d" : "1d", c.self_paced ? "self" : "peer",
              c.issuers, per_sm, delivered, from_memory, ms);
  std::printf(
      "{\"bench\":\"l2_intake\",\"source\":\"%s\",\"blocks\":%d,\"cluster\":%d,\"stages\":%d,"
      "\"stage_bytes\":%d,\"piece_bytes\":%d,\"tensor\":%s,\"self_paced\":%s,\"issuers\":%d,"
      "\"per_sm_gbs\":%.2f,"
      "\"delivered_gbs\":%.1f,\"read_gbs\":%.1f,\"ms\":%.4f}\n",
      c.source.c_str(), c.blocks, c.cluster, c.stages, c.stage_bytes, c.piece_bytes,
      c.tensor ? "true" : "false", c.self_paced ? "true" : "false", c.issuers, per_sm,
      delivered, from_memory, ms);
}

}  // namespace

// With --multicast, only the L2 cases at every SM in clusters of 1, 2 and 4 (for a profiler).
int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  check(cudaFuncSetAttribute(intake_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kBlockSmem),
        "cudaFuncSetAttribute");
  const int sms = prop.multiProcessorCount;
  int clock_khz = 0;
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "cudaDeviceGetAttribute");
  std::printf("device: %s, %d SMs, L2 %d MB, SM clock %d MHz\n", prop.name, sms,
              prop.l2CacheSize >> 20, clock_khz / 1000);

  const std::uint64_t l2_bytes = 24ull << 20;
  const std::uint64_t hbm_bytes = 4ull << 30;
  DeviceMemory l2(l2_bytes);
  DeviceMemory hbm(hbm_bytes);
  check(cudaMemset(l2.get(), 1, l2_bytes), "cudaMemset");
  check(cudaMemset(hbm.get(), 2, hbm_bytes), "cudaMemset");
  const Buffers buffers{l2.get(), l2_bytes, hbm.get(), hbm_bytes};

  std::printf(
      "\nGB/s into each block's shared memory (per SM), into all of them (delivered) and read "
      "from L2/HBM (delivered / cluster); ms per launch, median of 9\n");
  std::printf("| source | blocks | C | ring | piece | wait x issuers | per-SM | delivered | read "
              "| ms |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  const int kb = 1024;
  if (argc > 1 && std::string(argv[1]) == "--multicast") {
    for (int cluster : {1, 2, 4}) run({"l2", sms, cluster, 4, 32 * kb, 8 * kb}, buffers, sms);
    return 0;
  }
  for (const char* source : {"l2", "hbm"}) {
    // a) no cluster, 1 .. all SMs; c) the same from HBM
    for (int blocks : {1, 8, 33, 66, sms}) {
      run({source, blocks, 1, 4, 32 * kb, 8 * kb}, buffers, sms);
    }
    // b) multicast across clusters of 2 and 4
    for (int cluster : {2, 4}) {
      for (int blocks : {8, 66, sms}) {
        run({source, blocks, cluster, 4, 32 * kb, 8 * kb}, buffers, sms);
      }
    }
  }
  // Every cluster on the same bytes (as every column tile reads the same x).
  for (int cluster : {1, 2, 4}) run({"l2-same", sms, cluster, 4, 32 * kb, 8 * kb}, buffers, sms);
  // What limits one SM: bytes in flight (ring depth, stage size), the copy size, the consumer's
  // hop (self paced), the issue rate (copies from several lanes), the copy kind (2-d boxes of
  // 128-byte rows in the 128-byte swizzle, as the GEMMs' tensor maps).
  for (int blocks : {1, sms}) {
    for (int stages : {2, 6}) run({"l2", blocks, 1, stages, 32 * kb, 8 * kb}, buffers, sms);
    run({"l2", blocks, 1, 8, 16 * kb, 8 * kb}, buffers, sms);
    run({"l2", blocks, 1, 3, 64 * kb, 16 * kb}, buffers, sms);
    for (int piece : {2, 16, 32}) run({"l2", blocks, 1, 4, 32 * kb, piece * kb}, buffers, sms);
    run({"l2", blocks, 1, 4, 32 * kb, 8 * kb, true}, buffers, sms);
    run({"l2", blocks, 1, 4, 32 * kb, 2 * kb, false, false, 16}, buffers, sms);
    run({"l2", blocks, 1, 4, 32 * kb, 8 * kb, false, false, 4}, buffers, sms);
    for (int piece : {8, 16}) {
      run({"l2", blocks, 1, 4, 32 * kb, piece * kb, false, true}, buffers, sms);
    }
  }
  // Multicast with the variants above that could lift it.
  for (int cluster : {2, 4}) {
    run({"l2", sms, cluster, 6, 32 * kb, 8 * kb}, buffers, sms);
    run({"l2", sms, cluster, 3, 64 * kb, 16 * kb}, buffers, sms);
    run({"l2", sms, cluster, 4, 32 * kb, 8 * kb, false, true}, buffers, sms);
    run({"l2", sms, cluster, 4, 32 * kb, 2 * kb, false, false, 16}, buffers, sms);
    run({"hbm", sms, cluster, 3, 64 * kb, 16 * kb}, buffers, sms);
  }
  for (int blocks : {1, sms}) run({"hbm", blocks, 1, 3, 64 * kb, 16 * kb}, buffers, sms);
  return 0;
}
