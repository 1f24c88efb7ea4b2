// The GPU sampler (CudaSampler) per call at 1, 8, 64, 133 and 256 rows of 151936 f32 logits
// (Qwen3's vocabulary), for greedy, temperature 0.8, temperature 0.6 over narrow logits (a random
// model's: the noise decides), and temperature 0.7 with top_k 50 and top_p 0.95. 133 rows: one
// block per row would leave the second wave nearly empty.
// A call is what the worker pays per step: settings up, the kernel, tokens down, a sync.
//   call_us    host wall-clock per sample() call, median of 50 after 5 warm-up calls;
//   device_us  the same calls between CUDA events on the stream, median;
//   host_path_us  what the CPU sampler path costs instead: logits to the host and sample_batch
//              (median of 3; the figure the GPU sampler replaces).
// Logits are N(0, 3) per token (N(0, 0.3) for "narrow"), fresh for each row. Prints a table and
// one JSON line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda_check.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/cuda_sampler.hpp"
#include "backend/cpu_sampler.hpp"

namespace minivllm {
namespace {

constexpr std::int64_t kVocab = 151936;
constexpr int kMaxRows = 256;

struct Mode {
  const char* name;
  double temperature;
  int top_k;
  double top_p;
  bool narrow;  // logits N(0, 0.3) instead of N(0, 3)
};

struct Result {
  std::string mode;
  int rows;
  double call_us, device_us, host_path_us;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double microseconds_of(const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

// Normal logits N(0, sigma), from a cheap generator: 39M of them.
std::vector<float> random_logits(std::size_t n, double sigma) {
  std::mt19937_64 rng(42);
  std::vector<float> v(n);
  for (std::size_t i = 0; i + 1 < n; i += 2) {  // Box-Muller, two at a time
    const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const double r = sigma * std::sqrt(-2.0 * std::log(u1));
    v[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    v[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
  return v;
}

Result run(CudaOps& ops, CudaSampler& sampler, const Tensor& all_logits, const Mode& mode,
           int rows) {
  // The first `rows` rows of the uploaded logits, as a tensor of their own.
  const Tensor logits(nullptr, all_logits.data(), DType::f32, {rows, kVocab}, Device::cuda);
  SamplingParams params;
  params.temperature = mode.temperature;
  params.top_k = mode.top_k;
  params.top_p = mode.top_p;
  std::vector<std::mt19937_64> rngs(rows);
  for (int r = 0; r < rows; ++r) rngs[r].seed(r);
  std::vector<SamplerRow> sampler_rows;
  for (int r = 0; r < rows; ++r) sampler_rows.push_back({{}, &params, {}, {}, {}, &rngs[r]});

  cudaEvent_t start, stop;
  MV_CUDA_CHECK(cudaEventCreate(&start));
  MV_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 5; ++i) sampler.sample(logits, sampler_rows);
  std::vector<double> call, device;
  for (int i = 0; i < 50; ++i) {
    MV_CUDA_CHECK(cudaEventRecord(start, ops.stream()));
    call.push_back(microseconds_of([&] { sampler.sample(logits, sampler_rows); }));
    MV_CUDA_CHECK(cudaEventRecord(stop, ops.stream()));
    MV_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    MV_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    device.push_back(1000.0 * ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  std::vector<float> host(static_cast<std::size_t>(rows) * kVocab);
  std::vector<double> host_path;
  for (int i = 0; i < 3; ++i)
    host_path.push_back(microseconds_of([&] {
      ops.to_host(logits, host.data());
      std::vector<SamplerRow> with_logits = sampler_rows;
      for (int r = 0; r < rows; ++r)
        with_logits[r].logits = std::span<const float>(host).subspan(r * kVocab, kVocab);
      sample_batch(with_logits);
    }));
  return {mode.name, rows, median(call), median(device), median(host_path)};
}

}  // namespace
}  // namespace minivllm

int main() {
  using namespace minivllm;
  try {
    CudaOps ops(DType::f32);
    CudaSampler sampler(ops);
    constexpr auto kCount = static_cast<std::size_t>(kMaxRows) * kVocab;
    const std::vector<float> wide = random_logits(kCount, 3.0), narrow = random_logits(kCount, 0.3);
    const Tensor wide_logits = ops.from_host(wide.data(), DType::f32, {kMaxRows, kVocab});
    const Tensor narrow_logits = ops.from_host(narrow.data(), DType::f32, {kMaxRows, kVocab});
    const Mode modes[] = {{"greedy", 0.0, 0, 1.0, false},
                          {"temperature", 0.8, 0, 1.0, false},
                          {"narrow", 0.6, 0, 1.0, true},
                          {"top_p+top_k", 0.7, 50, 0.95, false}};
    std::vector<Result> results;
    for (const Mode& mode : modes)
      for (const int rows : {1, 8, 64, 133, 256})
        results.push_back(
            run(ops, sampler, mode.narrow ? narrow_logits : wide_logits, mode, rows));

    std::printf("GPU sampler, vocab %lld, f32 logits\n", static_cast<long long>(kVocab));
    std::printf("%-12s %5s %10s %10s %14s\n", "mode", "rows", "call_us", "device_us",
                "host_path_us");
    for (const Result& r : results)
      std::printf("%-12s %5d %10.1f %10.1f %14.1f\n", r.mode.c_str(), r.rows, r.call_us,
                  r.device_us, r.host_path_us);
    std::printf("{\"bench\": \"gpu_sampler\", \"vocab\": %lld, \"results\": [",
                static_cast<long long>(kVocab));
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf(
          "%s{\"mode\": \"%s\", \"rows\": %d, \"call_us\": %.1f, \"device_us\": %.1f, "
          "\"host_path_us\": %.1f}",
          i == 0 ? "" : ", ", r.mode.c_str(), r.rows, r.call_us, r.device_us, r.host_path_us);
    }
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_sampler_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
