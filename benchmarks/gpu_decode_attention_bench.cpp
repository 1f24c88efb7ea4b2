// Decode attention (kernels/cuda/paged_attention.cuh) on the GPU at hand: achieved GB/s of keys and
// values read, against a device-to-device copy measured in the same run (bytes read + written, as
// benchmarks/gpu_ceilings counts them). A bf16 cache, then an fp8_e4m3 one (codes and a scale per
// token and head, all counted as bytes read); q and out bf16; Qwen3-0.6B's heads (16 query heads, 8
// KV heads, head_dim 128; MINIVLLM_DECODE_BENCH_HEADS sets others), every sequence of a batch at
// the same context length, then batches of mixed lengths (uniform in [kRaggedMin, kRaggedMax], as
// throughput-256.json's decode steps have them; "context" 0 in the table; -1: the same lengths
// longest first, the order in which the engine has the kernel take them; -2: small batches of long
// mixed lengths, uniform in [kLongMin, kLongMax], longest first, in block tables as wide as a graph
// replay's), cache blocks shuffled as a long-running engine leaves them. Each timed launch reads
// another copy of the batch's blocks (at least 1 GiB between two reads of the same bytes) so the L2
// cache holds none. Prints a table and one JSON line. MINIVLLM_DECODE_BENCH_ONLY runs one case (for
// a profiler: scripts/gpu/run_decode_profile.sh).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "benchmarks/gpu_bench_support.hpp"
#include "kernels/bf16.hpp"
#include "kernels/cuda/paged_attention.cuh"

namespace {

using minivllm::DType;
namespace cuda = minivllm::cuda;
using minivllm::bench::check;
using minivllm::bench::median_ms;

constexpr std::int64_t kHeadDim = 128;
// Query and KV heads: Qwen3-0.6B's 16 / 8 unless MINIVLLM_DECODE_BENCH_HEADS="Q/KV" says
// otherwise. With one KV head a cache block holds each head's rows back to back, as a head-major
// layout would: "2/1" against the default tells what the token-major layout costs.
std::int64_t num_heads = 16, num_kv_heads = 8;
constexpr std::int64_t kBatches[] = {1, 8, 16, 32, 48, 64, 128, 256};
constexpr std::int64_t kContexts[] = {128, 512, 1024, 2048, 4096, 8192};
constexpr std::int64_t kBlockSizes[] = {16, 256};
constexpr std::int64_t kRaggedBatches[] = {64, 128, 256};
constexpr std::int32_t kRaggedMin = 100, kRaggedMax = 2048;
// Long mixed lengths in small batches, as the long workload's decode steps (benchmarks/
// make_long_workload.py, max_model_len 8704) have them, longest first ("context" -2).
constexpr std::int64_t kLongBatches[] = {8, 16, 32, 48, 64};
constexpr std::int32_t kLongMin = 4096, kLongMax = 8704;
constexpr int kWarmup = 3, kReps = 30;
constexpr std::size_t kRotationBytes = std::size_t{1} << 30;

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

// Device-to-device copy GB/s of 2 GiB, bytes read + written.
double copy_gbs() {
  const std::size_t bytes = std::size_t{2} << 30;
  void* src = device_alloc(bytes);
  void* dst = device_alloc(bytes);
  check(cudaMemset(src, 0x5A, bytes), "cudaMemset");
  const float ms = median_ms(kWarmup, kReps, [&](int) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
  });
  check(cudaFree(src), "cudaFree");
  check(cudaFree(dst), "cudaFree");
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

// `bytes` of random elements on the device: a 64 MiB random tile repeated. fp8: e4m3 codes with
// bit 3 clear (so never NaN, 0x7F / 0xFF); else bf16 in [-2, 2).
void* device_random(std::size_t bytes, bool fp8, std::mt19937& rng) {
  const std::size_t tile_elems = std::size_t{32} << 20;
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<std::uint16_t> host(tile_elems);  // fp8: two codes each
  for (auto& h : host)
    h = fp8 ? static_cast<std::uint16_t>(rng() & 0xF7F7u) : minivllm::f32_to_bf16(dist(rng));
  auto* d = static_cast<char*>(device_alloc(bytes));
  const std::size_t tile_bytes = tile_elems * sizeof(std::uint16_t);
  check(cudaMemcpy(d, host.data(), std::min(bytes, tile_bytes), cudaMemcpyHostToDevice),
        "upload");
  for (std::size_t at = tile_bytes; at < bytes; at += tile_bytes)
    check(cudaMemcpy(d + at, d, std::min(bytes - at, tile_bytes), cudaMemcpyDeviceToDevice),
          "tile");
  return d;
}

template <class T>
T* upload(const std::vector<T>& host) {
  auto* d = static_cast<T*>(device_alloc(host.size() * sizeof(T)));
  check(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return d;
}

struct Result {
  const char* kv;  // the cache dtype
  std::int64_t block_size, batch, context, splits;  // context 0: mixed lengths
  double us, gbs, percent_of_copy;
};

// Each batch's context lengths: uniform ones, then mixed ones for the larger batches, in random
// order and longest first.
std::vector<std::vector<std::int32_t>> context_cases(std::int64_t batch, std::mt19937& rng) {
  std::vector<std::vector<std::int32_t>> cases;
  for (const std::int64_t context : kContexts)
    cases.emplace_back(static_cast<std::size_t>(batch), static_cast<std::int32_t>(context));
  if (std::find(std::begin(kRaggedBatches), std::end(kRaggedBatches), batch) !=
      std::end(kRaggedBatches)) {
    std::uniform_int_distribution<std::int32_t> length(kRaggedMin, kRaggedMax);
    std::vector<std::int32_t>& mixed = cases.emplace_back(static_cast<std::size_t>(batch));
    for (std::int32_t& c : mixed) c = length(rng);
    std::vector<std::int32_t> longest_first = mixed;
    std::sort(longest_first.begin(), longest_first.end(), std::greater<>());
    cases.push_back(std::move(longest_first));
  }
  if (std::find(std::begin(kLongBatches), std::end(kLongBatches), batch) !=
      std::end(kLongBatches)) {
    std::uniform_int_distribution<std::int32_t> length(kLongMin, kLongMax);
    std::vector<std::int32_t>& mixed = cases.emplace_back(static_cast<std::size_t>(batch));
    for (std::int32_t& c : mixed) c = length(rng);
    std::sort(mixed.begin(), mixed.end(), std::greater<>());
  }
  return cases;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::mt19937 rng(std::random_device{}());
  if (const char* heads = std::getenv("MINIVLLM_DECODE_BENCH_HEADS")) {
    long long q = 0, kv = 0;
    if (std::sscanf(heads, "%lld/%lld", &q, &kv) != 2 || q < 1 || kv < 1 || q % kv != 0) {
      std::fprintf(stderr, "MINIVLLM_DECODE_BENCH_HEADS=%s: expected Q/KV, Q a multiple of KV\n",
                   heads);
      return 1;
    }
    num_heads = q;
    num_kv_heads = kv;
  }
  const double copy = copy_gbs();

  // One cache big enough for the largest batch; every configuration pages into it.
  const std::int64_t row_elems = num_kv_heads * kHeadDim;
  const std::int64_t max_tokens =  // the largest uniform batch
      *std::max_element(std::begin(kBatches), std::end(kBatches)) * kContexts[5];
  const std::size_t cache_bytes = static_cast<std::size_t>(max_tokens * row_elems) * 2;
  void* bf16_caches[2] = {device_random(cache_bytes, false, rng),
                          device_random(cache_bytes, false, rng)};
  void* fp8_caches[2] = {device_random(cache_bytes / 2, true, rng),
                         device_random(cache_bytes / 2, true, rng)};
  // e8m0 scales of 1 (kernels/fp8_scales.hpp).
  std::uint8_t* scales =
      upload(std::vector<std::uint8_t>(static_cast<std::size_t>(max_tokens * num_kv_heads), 127));

  // MINIVLLM_DECODE_BENCH_ONLY="CACHE BLOCK_SIZE BATCH CONTEXT" (a table row's first four
  // columns, e.g. "fp8_e4m3 256 256 8192"): that case alone, for a profiler.
  const char* only_env = std::getenv("MINIVLLM_DECODE_BENCH_ONLY");
  const std::string only = only_env != nullptr ? only_env : "";
  std::vector<Result> results;
  for (const bool fp8 : {false, true})
  for (const std::int64_t block_size : kBlockSizes) {
    const std::int64_t num_blocks = max_tokens / block_size;
    std::vector<std::int32_t> physical(static_cast<std::size_t>(num_blocks));
    for (const std::int64_t batch : kBatches) {
      for (const std::vector<std::int32_t>& context_lens : context_cases(batch, rng)) {
        const std::int64_t longest = *std::max_element(context_lens.begin(), context_lens.end());
        const bool uniform = std::all_of(context_lens.begin(), context_lens.end(),
                                         [&](std::int32_t c) { return c == longest; });
        const bool sorted = std::is_sorted(context_lens.begin(), context_lens.end(),
                                           std::greater<>());
        const bool long_mixed = !uniform && sorted && context_lens.back() >= kLongMin;
        const std::int64_t context = uniform ? longest : !sorted ? 0 : long_mixed ? -2 : -1;
        if (!only.empty() && only != std::string(fp8 ? "fp8_e4m3" : "bf16") + " " +
                                         std::to_string(block_size) + " " + std::to_string(batch) +
                                         " " + std::to_string(context))
          continue;
        // The long mixed batches' tables are as wide as a graph replay's: the next power of two
        // of blocks (runtime/backend/step_shapes.hpp), which the split plan sees.
        const auto blocks = static_cast<std::uint64_t>((longest + block_size - 1) / block_size);
        const auto blocks_per_seq =
            static_cast<std::int64_t>(long_mixed ? std::bit_ceil(blocks) : blocks);
        const std::int64_t tokens = std::accumulate(context_lens.begin(), context_lens.end(),
                                                    std::int64_t{0});
        // Keys + values (+ their scales, a byte per token and head).
        const std::int64_t kv_bytes =
            fp8 ? tokens * (row_elems + num_kv_heads) * 2 : tokens * row_elems * 2 * 2;
        const std::int64_t copies = std::clamp<std::int64_t>(
            static_cast<std::int64_t>(kRotationBytes) / kv_bytes + 1, 1,
            num_blocks / (batch * blocks_per_seq));
        std::iota(physical.begin(), physical.end(), 0);
        std::shuffle(physical.begin(), physical.end(), rng);
        const std::vector<std::int32_t> tables(
            physical.begin(), physical.begin() + copies * batch * blocks_per_seq);
        std::vector<std::int32_t> query_start(static_cast<std::size_t>(batch) + 1);
        std::iota(query_start.begin(), query_start.end(), 0);
        std::vector<std::uint16_t> q(static_cast<std::size_t>(batch * num_heads * kHeadDim));
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        for (auto& x : q) x = minivllm::f32_to_bf16(dist(rng));

        std::int32_t* d_tables = upload(tables);
        std::int32_t* d_query_start = upload(query_start);
        std::int32_t* d_context_lens = upload(context_lens);
        std::int64_t* d_total_context = upload(std::vector<std::int64_t>{tokens});
        std::uint16_t* d_q = upload(q);
        void* d_out = device_alloc(q.size() * sizeof(std::uint16_t));

        cuda::PagedAttentionParams p;
        p.dtype = DType::bf16;
        p.kv_dtype = fp8 ? DType::fp8_e4m3 : DType::bf16;
        p.key_scales = p.value_scales = fp8 ? scales : nullptr;
        p.q = d_q;
        p.key_cache = fp8 ? fp8_caches[0] : bf16_caches[0];
        p.value_cache = fp8 ? fp8_caches[1] : bf16_caches[1];
        p.query_start = d_query_start;
        p.context_lens = d_context_lens;
        p.num_seqs = batch;
        p.max_query_len = 1;
        p.max_blocks_per_seq = blocks_per_seq;
        p.num_blocks = num_blocks;
        p.block_size = block_size;
        p.num_heads = num_heads;
        p.num_kv_heads = num_kv_heads;
        p.head_dim = kHeadDim;
        p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
        p.out = d_out;
        p.total_context = d_total_context;  // as the engine gives it
        p.workspace_bytes = cuda::decode_attention_workspace_bytes(p);
        p.workspace = p.workspace_bytes > 0 ? device_alloc(p.workspace_bytes) : nullptr;
        const float ms = median_ms(kWarmup, kReps, [&](int rep) {
          p.block_tables = d_tables + (rep % copies) * batch * blocks_per_seq;
          check(cuda::launch_decode_attention(p, nullptr), "launch_decode_attention");
        });
        check(cudaGetLastError(), "decode attention");

        const std::int64_t partial_bytes = batch * num_heads * (kHeadDim + 2) * 4;
        const double gbs = static_cast<double>(kv_bytes) / (ms * 1e-3) / 1e9;
        results.push_back({fp8 ? "fp8_e4m3" : "bf16", block_size, batch, context,
                           std::max<std::int64_t>(1, static_cast<std::int64_t>(p.workspace_bytes) /
                                                         partial_bytes),
                           ms * 1e3, gbs, 100.0 * gbs / copy});
        for (void* d : {static_cast<void*>(d_tables), static_cast<void*>(d_query_start),
                        static_cast<void*>(d_context_lens), static_cast<void*>(d_total_context),
                        static_cast<void*>(d_q), d_out,
                        p.workspace})
          check(cudaFree(d), "cudaFree");
      }
    }
  }
  for (void* cache : {bf16_caches[0], bf16_caches[1], fp8_caches[0], fp8_caches[1]})
    check(cudaFree(cache), "cudaFree");
  check(cudaFree(scales), "cudaFree");

  std::printf("decode attention, bf16 q, %lld heads / %lld KV heads / head_dim %lld, on %s; "
              "D2D copy %.0f GB/s (read + write)\n",
              static_cast<long long>(num_heads), static_cast<long long>(num_kv_heads),
              static_cast<long long>(kHeadDim), prop.name, copy);
  std::printf("| cache | block size | batch | context | splits | us | K/V GB/s | %% of copy |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const Result& r : results)
    std::printf("| %s | %lld | %lld | %lld | %lld | %.1f | %.0f | %.1f |\n", r.kv,
                static_cast<long long>(r.block_size), static_cast<long long>(r.batch),
                static_cast<long long>(r.context), static_cast<long long>(r.splits), r.us, r.gbs,
                r.percent_of_copy);
  std::string json = "{\"device\":\"" + std::string(prop.name) +
                     "\",\"q_dtype\":\"bf16\",\"heads\":" + std::to_string(num_heads) +
                     ",\"kv_heads\":" + std::to_string(num_kv_heads) +
                     ",\"head_dim\":" + std::to_string(kHeadDim) + "," +
                     "\"copy_gbs\":" + std::to_string(copy) + ",\"results\":[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char row[256];
    std::snprintf(row, sizeof row,
                  "%s{\"kv_dtype\":\"%s\",\"block_size\":%lld,\"batch\":%lld,\"context\":%lld,"
                  "\"splits\":%lld,"
                  "\"us\":%.2f,\"kv_gbs\":%.1f,\"percent_of_copy\":%.1f}",
                  i == 0 ? "" : ",", r.kv, static_cast<long long>(r.block_size),
                  static_cast<long long>(r.batch), static_cast<long long>(r.context),
                  static_cast<long long>(r.splits), r.us, r.gbs, r.percent_of_copy);
    json += row;
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}
