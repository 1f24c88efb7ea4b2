// The all-reduce of tensor parallelism at a decode step's message sizes: rows x hidden bf16
// (1-256 rows), summed in place over every visible GPU, one thread and one NcclCommunicator
// (CudaOps' own) per GPU, as the engine's worker ranks do. Two ways, medians of kIters after
// kWarmup, each call timed alone with events on its rank's stream (the ranks start each one
// together at a barrier; a row of the table is the slowest rank's median):
//   nccl   ncclAllReduce queued eagerly, one call at a time;
//   graph  the same call captured in a CUDA graph and replayed, as the engine's decode steps run
//          it (CudaOps queues its collectives on the stream the graphs capture).
// Prints a table and one JSON line. With fewer than two GPUs it says so and exits 0. Not run by
// the tests.
//   gpu_allreduce_bench [HIDDEN=1024]
#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "backend/nccl_communicator.hpp"

namespace {

using namespace minivllm;

constexpr int kWarmup = 20;
constexpr int kIters = 200;
constexpr int kRows[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
constexpr int kCases = static_cast<int>(std::size(kRows));

struct Median {
  double nccl_us = 0;
  double graph_us = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank `rank`'s medians for every row count.
void run_rank(const NcclRank& who, int hidden, std::barrier<>& together,
              std::vector<Median>& out) {
  MV_CUDA_CHECK(cudaSetDevice(who.rank));
  NcclCommunicator comm(who);
  cudaStream_t stream = nullptr;
  MV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* x = nullptr;
  const std::size_t most = static_cast<std::size_t>(kRows[kCases - 1]) * hidden;
  MV_CUDA_CHECK(cudaMalloc(&x, most * 2));
  MV_CUDA_CHECK(cudaMemsetAsync(x, 0, most * 2, stream));  // zeros: sums stay finite
  cudaEvent_t start = nullptr, stop = nullptr;
  MV_CUDA_CHECK(cudaEventCreate(&start));
  MV_CUDA_CHECK(cudaEventCreate(&stop));

  // One timed call of `queue` (which queues the all-reduce on `stream`), started together.
  auto timed = [&](auto&& queue) {
    std::vector<double> us;
    for (int i = 0; i < kWarmup + kIters; ++i) {
      MV_CUDA_CHECK(cudaStreamSynchronize(stream));
      together.arrive_and_wait();
      MV_CUDA_CHECK(cudaEventRecord(start, stream));
      queue();
      MV_CUDA_CHECK(cudaEventRecord(stop, stream));
      MV_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      MV_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (i >= kWarmup) us.push_back(1000.0 * ms);
    }
    return median(std::move(us));
  };

  for (int c = 0; c < kCases; ++c) {
    const std::size_t count = static_cast<std::size_t>(kRows[c]) * hidden;
    out[c].nccl_us = timed([&] { comm.all_reduce(x, count, DType::bf16, stream); });
    cudaGraph_t graph = nullptr;
    MV_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    comm.all_reduce(x, count, DType::bf16, stream);
    MV_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    MV_CUDA_CHECK(cudaGraphDestroy(graph));
    MV_CUDA_CHECK(instantiated);
    out[c].graph_us = timed([&] { MV_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
    MV_CUDA_CHECK(cudaGraphExecDestroy(exec));
  }
  MV_CUDA_CHECK(cudaStreamSynchronize(stream));
  MV_CUDA_CHECK(cudaEventDestroy(start));
  MV_CUDA_CHECK(cudaEventDestroy(stop));
  MV_CUDA_CHECK(cudaFree(x));
  MV_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace

int main(int argc, char** argv) try {
  const int hidden = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (hidden <= 0) {
    std::fprintf(stderr, "usage: gpu_allreduce_bench [HIDDEN=1024]\n");
    return 2;
  }
  int ranks = 0;
  if (cudaGetDeviceCount(&ranks) != cudaSuccess) ranks = 0;  // no driver, no device: none
  if (ranks < 2) {
    std::printf("gpu_allreduce_bench: skipped: %d GPU visible, an all-reduce needs 2 or more\n",
                ranks);
    return 0;
  }
  const NcclUniqueId id = NcclCommunicator::unique_id();
  std::barrier together(ranks);
  std::vector<std::vector<Median>> medians(static_cast<std::size_t>(ranks),
                                           std::vector<Median>(kCases));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        run_rank({id, r, ranks}, hidden, together, medians[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_allreduce_bench: rank %d: %s\n", r, e.what());
        std::_Exit(1);  // the other ranks would wait at the barrier for ever
      }
    });
  for (std::thread& t : threads) t.join();

  std::printf("all-reduce, bf16, %d GPUs, hidden %d (us, slowest rank's median of %d)\n", ranks,
              hidden, kIters);
  std::printf("%6s %10s | %9s %9s | %9s\n", "rows", "bytes", "nccl", "graph", "busbw GB/s");
  std::string json = "{\"ranks\": " + std::to_string(ranks) + ", \"hidden\": " +
                     std::to_string(hidden) + ", \"cases\": [";
  for (int c = 0; c < kCases; ++c) {
    Median worst;
    for (const auto& rank : medians) {
      worst.nccl_us = std::max(worst.nccl_us, rank[c].nccl_us);
      worst.graph_us = std::max(worst.graph_us, rank[c].graph_us);
    }
    const double bytes = 2.0 * kRows[c] * hidden;
    // NCCL's bus bandwidth of an all-reduce: 2 (n - 1) / n of the bytes cross each link.
    const double busbw = bytes * 2 * (ranks - 1) / ranks / (worst.nccl_us * 1e3);
    std::printf("%6d %10.0f | %9.2f %9.2f | %9.1f\n", kRows[c], bytes, worst.nccl_us,
                worst.graph_us, busbw);
    json += std::string(c ? ", " : "") + "{\"rows\": " + std::to_string(kRows[c]) +
            ", \"bytes\": " + std::to_string(static_cast<long long>(bytes)) +
            ", \"nccl_us\": " + std::to_string(worst.nccl_us) +
            ", \"graph_us\": " + std::to_string(worst.graph_us) + "}";
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu_allreduce_bench: %s\n", e.what());
  return 1;
}
