// The small per-layer kernels (rms_norm, add_rms_norm, silu_and_mul, attention_inputs, embedding)
// at Qwen3-0.6B's dimensions (hidden 1024, 16 q / 8 kv heads of 128, intermediate 3072, vocab
// 151936) for 1 to 16,384 rows (tokens), bf16:
//   us    device time per launch: for rows <= 256 a CUDA graph of kGraphLaunches launches (as a
//         decode step replays them), else kStreamLaunches plain launches, between CUDA events;
//         median of kReplays, divided by the launches;
//   GB/s  bytes the op must move (inputs read once, outputs written once) / us. The launches
//         cycle over copies of their buffers filling >= kRotationBytes where one copy is large,
//         so large inputs come from HBM, not L2; small ones stay in L2 as in a decode step.
//   hash  FNV-1a of each output (attention_inputs: q/keys/values; add_rms_norm: out/residual) of
//         one launch on fixed inputs: equal hashes across two builds (e.g. old and new kernels)
//         mean bitwise-equal results.
// Prints a table and one JSON line; argv[1] labels the build (default "current").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/attention_inputs.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace minivllm {
namespace {

using bench::check;
using bench::DeviceMemory;

constexpr std::int64_t kHidden = 1024, kHeads = 16, kKvHeads = 8, kHeadDim = 128;
constexpr std::int64_t kIntermediate = 3072, kVocab = 151936;
constexpr std::int64_t kRows[] = {1, 8, 64, 256, 4096, 16384};
constexpr std::int64_t kMaxGraphRows = 256;
constexpr int kGraphLaunches = 64;
constexpr int kStreamLaunches = 8;
constexpr int kReplays = 9;
constexpr std::size_t kRotationBytes = std::size_t{256} << 20;
constexpr float kEps = 1e-6f;

enum class Fill { none, activation, weight, angles, slots, ids };

struct Tensor {
  std::size_t bytes;
  Fill fill;
  bool output;  // hashed after the checked launch
  std::size_t offset = 0;  // in a copy, set by lay_out
};

// One op at one row count: its tensors (one copy of them) and how to launch it on a copy.
struct Case {
  std::string op;
  std::int64_t rows = 0;
  std::vector<Tensor> tensors;
  std::size_t moved_bytes = 0;  // per launch
  std::function<void(char* copy, cudaStream_t)> launch;
};

// Places the tensors one after another, each 256-byte aligned; returns the copy's size.
std::size_t lay_out(std::vector<Tensor>& tensors) {
  std::size_t offset = 0;
  for (Tensor& t : tensors) {
    t.offset = offset;
    offset += (t.bytes + 255) / 256 * 256;
  }
  return std::max<std::size_t>(offset, 256);
}

// A fixed-seed generator, the same in every build of the benchmark.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint32_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state_ >> 32);
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 8) / static_cast<float>(1u << 24);
  }

 private:
  std::uint64_t state_;
};

std::uint16_t to_bf16_bits(float x) {  // truncation: any bf16 value will do as input
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

// The host bytes of an input tensor.
std::vector<char> host_input(const Tensor& t, Random& random) {
  std::vector<char> out(t.bytes);
  const auto fill = [&](auto& values, auto make) {
    for (auto& v : values) v = make();
    std::memcpy(out.data(), values.data(), t.bytes);
  };
  switch (t.fill) {
    case Fill::none: break;
    case Fill::activation:
    case Fill::weight: {
      std::vector<std::uint16_t> v(t.bytes / 2);
      const bool weight = t.fill == Fill::weight;
      const float lo = weight ? 0.5f : -2.0f, hi = weight ? 1.5f : 2.0f;
      fill(v, [&] { return to_bf16_bits(random.uniform(lo, hi)); });
      break;
    }
    case Fill::angles: {  // rows of cosines then sines (rotary_angles.cuh)
      std::vector<float> v(t.bytes / 4);
      const std::size_t half = kHeadDim / 2;
      for (std::size_t i = 0; i < v.size(); i += 2 * half)
        for (std::size_t j = 0; j < half; ++j) {
          const float angle = random.uniform(-4.0f, 4.0f);
          v[i + j] = std::cos(angle);
          v[i + half + j] = std::sin(angle);
        }
      std::memcpy(out.data(), v.data(), t.bytes);
      break;
    }
    case Fill::slots: {  // a permutation of [0, rows): scattered cache writes
      std::vector<std::int64_t> v(t.bytes / 8);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
      for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[random.next() % i]);
      std::memcpy(out.data(), v.data(), t.bytes);
      break;
    }
    case Fill::ids: {
      std::vector<std::int32_t> v(t.bytes / 4);
      fill(v, [&] { return static_cast<std::int32_t>(random.next() % kVocab); });
      break;
    }
  }
  return out;
}

struct Shared {
  DeviceMemory table{static_cast<std::size_t>(kVocab * kHidden * 2)};
};

Case make_case(const std::string& op, std::int64_t rows, const Shared& shared) {
  const auto n = static_cast<std::size_t>(rows);
  Case c;
  c.op = op;
  c.rows = rows;
  if (op == "rms_norm" || op == "add_rms_norm") {
    const bool add = op == "add_rms_norm";
    const std::size_t act = n * kHidden * 2;
    c.tensors = {{act, Fill::activation, false},           // x
                 {kHidden * 2, Fill::weight, false},       // weight
                 {act, Fill::none, true},                  // out
                 {add ? act : 0, Fill::activation, add}};  // residual
    c.moved_bytes = (add ? 4 : 2) * act + kHidden * 2;
  } else if (op == "silu_and_mul") {
    const std::size_t out = n * kIntermediate * 2;
    c.tensors = {{2 * out, Fill::activation, false}, {out, Fill::none, true}};
    c.moved_bytes = 3 * out;
  } else if (op == "attention_inputs") {
    const std::size_t head = kHeadDim * 2, q = n * kHeads * head;
    const std::size_t qkv = n * (kHeads + 2 * kKvHeads) * head, cache = n * kKvHeads * head;
    c.tensors = {{qkv, Fill::activation, false},   {n * kHeadDim * 4, Fill::angles, false},
                 {n * 8, Fill::slots, false},      {head, Fill::weight, false},
                 {head, Fill::weight, false},      {q, Fill::none, true},
                 {cache, Fill::none, true},        {cache, Fill::none, true}};
    c.moved_bytes = qkv + q + 2 * cache + n * (kHeadDim * 4 + 8);
  } else {  // embedding
    const std::size_t out = n * kHidden * 2;
    c.tensors = {{n * 4, Fill::ids, false}, {out, Fill::none, true}};
    c.moved_bytes = 2 * out + n * 4;
  }
  lay_out(c.tensors);
  const std::vector<Tensor> t = c.tensors;
  const char* table = shared.table.get();
  c.launch = [op, t, rows, table](char* p, cudaStream_t s) {
    const auto at = [&](std::size_t i) { return p + t[i].offset; };
    if (op == "rms_norm") {
      check(cuda::launch_rms_norm(DType::bf16, at(0), at(1), at(2), rows, kHidden, kEps, s),
            "launch_rms_norm");
    } else if (op == "add_rms_norm") {
      check(cuda::launch_add_rms_norm(DType::bf16, at(0), at(3), at(1), at(2), rows, kHidden,
                                      kEps, s),
            "launch_add_rms_norm");
    } else if (op == "silu_and_mul") {
      check(cuda::launch_silu_and_mul(DType::bf16, at(0), at(1), rows, kIntermediate, s),
            "launch_silu_and_mul");
    } else if (op == "attention_inputs") {
      cuda::AttentionInputsParams a;
      a.dtype = DType::bf16;
      a.qkv = at(0);
      a.rotary = reinterpret_cast<const float*>(at(1));
      a.slot_mapping = reinterpret_cast<const std::int64_t*>(at(2));
      a.q_norm_weight = at(3);
      a.k_norm_weight = at(4);
      a.q = at(5);
      a.key_cache = at(6);
      a.value_cache = at(7);
      a.num_tokens = rows;
      a.num_heads = kHeads;
      a.num_kv_heads = kKvHeads;
      a.head_dim = kHeadDim;
      a.num_slots = rows;
      a.norm_eps = kEps;
      check(cuda::launch_attention_inputs(a, s), "launch_attention_inputs");
    } else {
      check(cuda::launch_embedding(DType::bf16, table, 0, kVocab, kVocab, kHidden,
                                   reinterpret_cast<const std::int32_t*>(at(0)), nullptr, rows,
                                   at(1), s),
            "launch_embedding");
    }
  };
  return c;
}

std::uint64_t fnv1a(const std::vector<char>& bytes) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char b : bytes) h = (h ^ static_cast<unsigned char>(b)) * 0x100000001B3ull;
  return h;
}

struct Result {
  std::string op;
  std::int64_t rows;
  double us, mb;
  std::string hashes;  // one per output, '/'-separated
};

// Median device microseconds per launch of `launch(i)` (i: the launch's index): `launches` of
// them captured in a graph or issued on the stream, between events.
double time_per_launch(cudaStream_t stream, bool graph, int launches,
                       const std::function<void(int)>& launch) {
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int i = 0; i < launches; ++i) launch(i);
    check(cudaStreamEndCapture(stream, &g), "end capture");
    check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
    check(cudaGraphDestroy(g), "cudaGraphDestroy");
  }
  const auto run = [&] {
    if (graph) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    else
      for (int i = 0; i < launches; ++i) launch(i);
  };
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  run();  // warm-up
  std::vector<double> us;
  for (int r = 0; r < kReplays; ++r) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    us.push_back(1000.0 * ms / launches);
  }
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  if (exec != nullptr) check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

Result measure(const Case& c, cudaStream_t stream) {
  std::vector<Tensor> tensors = c.tensors;
  const std::size_t copy = lay_out(tensors);
  const bool graph = c.rows <= kMaxGraphRows;
  const int launches = graph ? kGraphLaunches : kStreamLaunches;
  const std::size_t copies = std::clamp<std::size_t>((kRotationBytes + copy - 1) / copy, 1,
                                                     static_cast<std::size_t>(launches));
  DeviceMemory memory(copies * copy);
  check(cudaMemset(memory.get(), 0, copies * copy), "cudaMemset");
  Random random(static_cast<std::uint64_t>(c.rows) * 131 + c.op.size());
  for (const Tensor& t : tensors) {
    if (t.fill == Fill::none || t.bytes == 0) continue;
    const std::vector<char> host = host_input(t, random);
    for (std::size_t k = 0; k < copies; ++k)
      check(cudaMemcpy(memory.get() + k * copy + t.offset, host.data(), t.bytes,
                       cudaMemcpyHostToDevice),
            "cudaMemcpy inputs");
  }
  // The checked launch, on fresh inputs.
  c.launch(memory.get(), stream);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::string hashes;
  for (const Tensor& t : tensors) {
    if (!t.output || t.bytes == 0) continue;
    std::vector<char> host(t.bytes);
    check(cudaMemcpy(host.data(), memory.get() + t.offset, t.bytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy outputs");
    char hex[9];  // the top 32 bits are enough to tell builds apart
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(fnv1a(host) >> 32));
    hashes += (hashes.empty() ? "" : "/") + std::string(hex);
  }
  const double us = time_per_launch(stream, graph, launches, [&](int i) {
    c.launch(memory.get() + static_cast<std::size_t>(i) % copies * copy, stream);
  });
  return {c.op, c.rows, us, static_cast<double>(c.moved_bytes) / 1e6, hashes};
}

std::vector<Result> run() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  Shared shared;
  {
    Random random(7);
    const std::vector<char> table =
        host_input({static_cast<std::size_t>(kVocab * kHidden * 2), Fill::activation, false},
                   random);
    check(cudaMemcpy(shared.table.get(), table.data(), table.size(), cudaMemcpyHostToDevice),
          "cudaMemcpy table");
  }
  std::vector<Result> results;
  for (const char* op : {"rms_norm", "add_rms_norm", "silu_and_mul", "attention_inputs",
                         "embedding"})
    for (const std::int64_t rows : kRows)
      results.push_back(measure(make_case(op, rows, shared), stream));
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return results;
}

void print(const std::vector<Result>& results, const char* label) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("small kernels (%s) on %s, bf16, Qwen3-0.6B dims; rows <= %lld in a graph of %d "
              "launches, larger %d stream launches\n",
              label, prop.name, static_cast<long long>(kMaxGraphRows), kGraphLaunches,
              kStreamLaunches);
  std::printf("%-17s %6s %9s %9s %8s  %s\n", "op", "rows", "MB", "us", "GB/s", "hashes");
  for (const Result& r : results)
    std::printf("%-17s %6lld %9.3f %9.2f %8.0f  %s\n", r.op.c_str(),
                static_cast<long long>(r.rows), r.mb, r.us, r.mb * 1e3 / r.us, r.hashes.c_str());
  std::printf("{\"bench\": \"gpu_small_kernels\", \"label\": \"%s\", \"device\": \"%s\", "
              "\"results\": [",
              label, prop.name);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf("%s{\"op\": \"%s\", \"rows\": %lld, \"mb\": %.4f, \"us\": %.3f, "
                "\"hashes\": \"%s\"}",
                i == 0 ? "" : ", ", r.op.c_str(), static_cast<long long>(r.rows), r.mb, r.us,
                r.hashes.c_str());
  }
  std::printf("]}\n");
}

}  // namespace
}  // namespace minivllm

int main(int argc, char** argv) {
  minivllm::print(minivllm::run(), argc > 1 ? argv[1] : "current");
  return 0;
}
