// What a dependent phase boundary costs on the GPU: the price a persistent decode kernel (one
// launch running a layer's phases with grid-wide barriers between them) would pay instead of a
// kernel boundary. Each phase is the smallest dependent step: every block writes a word, and
// after the boundary reads a word another block wrote (a round trip through the L2). Per
// boundary, microseconds (CUDA events around 400 phases, median of 15, after warm-up):
//   graph, dependent launch   a CUDA graph of 400 kernels launched with programmatic stream
//                             serialization, as the decode step's own kernels are;
//   graph, plain launch       the same graph without it (as cuBLAS's kernels follow ours);
//   cooperative grid.sync()   one cooperative kernel, 400 phases, cooperative_groups' barrier;
//   atomic barrier            one kernel, 400 phases, a counter and a generation word in global
//                             memory (arrive with atomicAdd, the last one bumps the generation).
// At 1, 2 and 4 blocks of 128 threads per SM. Prints a table and one JSON line. The question
// and the reading: docs/engine-speed.md (kernel boundaries).
#include <cooperative_groups.h>

#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "kernels/cuda/detail/dependent_launch.cuh"

namespace {

using minivllm::bench::check;
using minivllm::bench::DeviceMemory;
using minivllm::bench::median_ms;
using minivllm::cuda::detail::allow_dependents;
using minivllm::cuda::detail::launch_dependent;
using minivllm::cuda::detail::wait_for_prior_grids;

constexpr int kPhases = 400;
constexpr int kThreads = 128;
constexpr int kWarmup = 3;
constexpr int kReps = 15;

// One phase as its own kernel: read what the neighbouring block wrote in the kernel before, write
// this block's word for the kernel after.
__global__ void phase_kernel(unsigned* words, int phase) {
  wait_for_prior_grids();
  allow_dependents();
  if (threadIdx.x == 0) {
    const unsigned seen = __ldcg(words + (blockIdx.x + 1) % gridDim.x);
    __stcg(words + blockIdx.x, seen + phase);
  }
}

// Every phase in one cooperative kernel, grid.sync() between them.
__global__ void grid_sync_kernel(unsigned* words) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  for (int phase = 0; phase < kPhases; ++phase) {
    if (threadIdx.x == 0) {
      const unsigned seen = __ldcg(words + (blockIdx.x + 1) % gridDim.x);
      __stcg(words + blockIdx.x, seen + phase);
    }
    grid.sync();
  }
}

// Every phase in one kernel, a hand-made barrier: blocks arrive on a counter; the last to arrive
// resets it and bumps the generation the others spin on. `barrier` is {count, generation}, zero.
__global__ void atomic_barrier_kernel(unsigned* words, unsigned* barrier) {
  volatile unsigned* generation = barrier + 1;
  for (int phase = 0; phase < kPhases; ++phase) {
    if (threadIdx.x == 0) {
      const unsigned seen = __ldcg(words + (blockIdx.x + 1) % gridDim.x);
      __stcg(words + blockIdx.x, seen + phase);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned current = *generation;
      __threadfence();
      if (atomicAdd(barrier, 1u) == gridDim.x - 1) {
        barrier[0] = 0;
        __threadfence();
        *generation = current + 1;
      } else {
        while (*generation == current) {
        }
      }
      __threadfence();
    }
    __syncthreads();
  }
}

// A graph of kPhases phase kernels on `blocks` blocks, with or without dependent launch.
cudaGraphExec_t phase_graph(unsigned* words, int blocks, bool dependent) {
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  for (int phase = 0; phase < kPhases; ++phase) {
    if (dependent) {
      check(launch_dependent(phase_kernel, blocks, kThreads, 0, stream, words, phase),
            "launch_dependent");
    } else {
      phase_kernel<<<blocks, kThreads, 0, stream>>>(words, phase);
    }
  }
  cudaGraph_t graph;
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return exec;
}

}  // namespace

int main() {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::printf("gpu_phase_sync_bench: skipped, no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int sms = prop.multiProcessorCount;
  DeviceMemory words(sizeof(unsigned) * 4 * sms), barrier(2 * sizeof(unsigned));
  check(cudaMemset(words.get(), 0, sizeof(unsigned) * 4 * sms), "cudaMemset");
  check(cudaMemset(barrier.get(), 0, 2 * sizeof(unsigned)), "cudaMemset");
  auto* w = reinterpret_cast<unsigned*>(words.get());
  auto* b = reinterpret_cast<unsigned*>(barrier.get());

  std::printf("phase boundaries on %s (%d SMs), us each (median of %d x %d phases)\n", prop.name,
              sms, kReps, kPhases);
  std::printf("| blocks per SM | graph, dependent launch | graph, plain launch | "
              "cooperative grid.sync() | atomic barrier |\n|---|---|---|---|---|\n");
  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"cases\":[";
  for (const int per_sm : {1, 2, 4}) {
    const int blocks = per_sm * sms;
    int fits = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, grid_sync_kernel, kThreads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (fits < per_sm) continue;
    const auto per_phase_us = [](float ms) { return ms * 1e3 / kPhases; };
    cudaGraphExec_t dependent = phase_graph(w, blocks, true), plain = phase_graph(w, blocks, false);
    const auto replay = [](cudaGraphExec_t exec) {
      return median_ms(kWarmup, kReps, [&] { check(cudaGraphLaunch(exec, 0), "cudaGraphLaunch"); });
    };
    const double t_dependent = per_phase_us(replay(dependent));
    const double t_plain = per_phase_us(replay(plain));
    const double t_grid = per_phase_us(median_ms(kWarmup, kReps, [&] {
      void* args[] = {&w};
      check(cudaLaunchCooperativeKernel(grid_sync_kernel, blocks, kThreads, args, 0, 0),
            "cudaLaunchCooperativeKernel");
    }));
    const double t_atomic = per_phase_us(median_ms(kWarmup, kReps, [&] {
      // Co-resident by the occupancy check above; launched cooperatively so the driver says so.
      void* args[] = {&w, &b};
      check(cudaLaunchCooperativeKernel(atomic_barrier_kernel, blocks, kThreads, args, 0, 0),
            "cudaLaunchCooperativeKernel");
    }));
    check(cudaGetLastError(), "phase kernels");
    check(cudaGraphExecDestroy(dependent), "cudaGraphExecDestroy");
    check(cudaGraphExecDestroy(plain), "cudaGraphExecDestroy");
    std::printf("| %d | %.2f | %.2f | %.2f | %.2f |\n", per_sm, t_dependent, t_plain, t_grid,
                t_atomic);
    json += std::string(per_sm == 1 ? "" : ",") + "{\"blocks_per_sm\":" + std::to_string(per_sm) +
            ",\"graph_dependent_us\":" + std::to_string(t_dependent) + ",\"graph_plain_us\":" +
            std::to_string(t_plain) + ",\"grid_sync_us\":" + std::to_string(t_grid) +
            ",\"atomic_barrier_us\":" + std::to_string(t_atomic) + "}";
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}
