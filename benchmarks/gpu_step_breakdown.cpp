// Where one forward step's time goes on the GPU: per op (GEMMs split into the layers' and the
// lm_head's, attention, norms, ...) measured with CUDA events around each op, against the whole
// step measured with events around forward() alone (their difference is the GPU idling between
// kernels, launch overhead included) and the host time forward() takes to queue the step.
// Steps run eagerly (no CUDA graphs: gpu_decode_steps times those) with the batch staged once per
// step, as the engine runs them. Decode steps at several batch sizes, 128- and 1,024-token
// prefills and one ragged ~16k-token prefill (the throughput workload's first step), bf16. Prints a
// table per case and one JSON line. Not run by the tests.
//   gpu_step_breakdown MODEL_DIR PLUGIN_DIR [CONTEXT_LEN=1024]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda_check.hpp"
#include "backend/cuda_ops.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "model_bench_support.hpp"

namespace {

using namespace minivllm;
using Clock = std::chrono::steady_clock;

using bench::kBlockSize;
using bench::kWarmup;
constexpr int kSteps = 10;

// Forwards every op to CudaOps, bracketing each with a pair of events on its stream.
class TimedOps final : public Ops {
 private:
  struct Mark {
    cudaEvent_t start, end;
    std::string name;
  };

  template <class F>
  auto timed(const char* name, F&& op) {
    if (used_ == marks_.size()) {
      Mark m{nullptr, nullptr, {}};
      MV_CUDA_CHECK(cudaEventCreate(&m.start));
      MV_CUDA_CHECK(cudaEventCreate(&m.end));
      marks_.push_back(std::move(m));
    }
    Mark& m = marks_[used_++];
    m.name = name;
    MV_CUDA_CHECK(cudaEventRecord(m.start, inner_.stream()));
    auto result = op();
    MV_CUDA_CHECK(cudaEventRecord(m.end, inner_.stream()));
    return result;
  }

  CudaOps& inner_;
  std::vector<Mark> marks_;
  std::size_t used_ = 0;

 public:
  explicit TimedOps(CudaOps& inner) : inner_(inner) {}
  ~TimedOps() override {
    for (auto& [start, end, name] : marks_) {
      cudaEventDestroy(start);
      cudaEventDestroy(end);
    }
  }

  // Per-op milliseconds summed since the last call (synchronizes).
  std::map<std::string, double> take() {
    MV_CUDA_CHECK(cudaStreamSynchronize(inner_.stream()));
    std::map<std::string, double> ms;
    for (std::size_t i = 0; i < used_; ++i) {
      float t = 0;
      MV_CUDA_CHECK(cudaEventElapsedTime(&t, marks_[i].start, marks_[i].end));
      ms[marks_[i].name] += t;
    }
    used_ = 0;
    return ms;
  }

  Device device() const override { return inner_.device(); }
  // Steps run through CudaOps's step runner, so the ops read the batch it staged once per step
  // (the engine's path; a per-op upload would put its host round trip inside the op's events).
  std::unique_ptr<StepRunner> make_step_runner(StepForward forward) override {
    return inner_.make_step_runner(std::move(forward));
  }
  Tensor zeros(const Shape& shape, DType dtype) override { return inner_.zeros(shape, dtype); }
  Tensor empty(const Shape& shape, DType dtype) override { return inner_.empty(shape, dtype); }
  Tensor from_host(const void* data, DType dtype, const Shape& shape) override {
    return inner_.from_host(data, dtype, shape);
  }
  void to_host(const Tensor& t, void* dst) override { inner_.to_host(t, dst); }

  Tensor embedding(const Tensor& table, const Batch& batch, std::int64_t first_id,
                   std::int64_t vocab_size) override {
    return timed("embedding", [&] { return inner_.embedding(table, batch, first_id, vocab_size); });
  }
  Tensor linear(const Tensor& x, const Tensor& weight) override {
    // The lm_head is the one GEMM whose output is f32 logits.
    return timed(x.dtype() == DType::f32 ? "gemm lm_head" : "gemm layers",
                 [&] { return inner_.linear(x, weight); });
  }
  void add_bias(Tensor& x, const Tensor& bias) override {
    timed("add_bias", [&] {
      inner_.add_bias(x, bias);
      return 0;
    });
  }
  Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) override {
    return timed("rms_norm", [&] { return inner_.rms_norm(x, weight, eps); });
  }
  Tensor add_rms_norm(const Tensor& x, Tensor& residual, const Tensor& weight,
                      float eps) override {
    return timed("add_rms_norm", [&] { return inner_.add_rms_norm(x, residual, weight, eps); });
  }
  Tensor attention_inputs(const Tensor& qkv, const Tensor& q_norm, const Tensor& k_norm,
                          float eps, const Tensor& inv_freq, Tensor& key_cache,
                          Tensor& value_cache, const Batch& batch) override {
    return timed("attention_inputs", [&] {
      return inner_.attention_inputs(qkv, q_norm, k_norm, eps, inv_freq, key_cache, value_cache,
                                     batch);
    });
  }
  Tensor silu_and_mul(const Tensor& gate_up) override {
    return timed("silu_and_mul", [&] { return inner_.silu_and_mul(gate_up); });
  }
  Tensor paged_attention(const Tensor& q, const Tensor& key_cache, const Tensor& value_cache,
                         const Batch& batch, float scale) override {
    return timed("paged_attention",
                 [&] { return inner_.paged_attention(q, key_cache, value_cache, batch, scale); });
  }
  // Timed whole, fused or not as the backend runs it.
  Tensor linear_silu_and_mul(const Tensor& x, const Tensor& gate_up_weight) override {
    return timed("gate_up GEMM + silu_and_mul",
                 [&] { return inner_.linear_silu_and_mul(x, gate_up_weight); });
  }
  Tensor gather_rows(const Tensor& x, const std::vector<std::int32_t>& rows) override {
    return timed("gather_rows", [&] { return inner_.gather_rows(x, rows); });
  }
  void all_reduce(Tensor& x) override {
    timed("all_reduce", [&] {
      inner_.all_reduce(x);
      return 0;
    });
  }
  Tensor all_gather(const Tensor& x) override {
    return timed("all_gather", [&] { return inner_.all_gather(x); });
  }
};

struct Case {
  std::string name;
  Batch batch;
};

// `seqs` sequences, each with `context - new_tokens` tokens cached and `new_tokens` new ones, on
// disjoint blocks.
Case make_case(std::string name, std::int32_t seqs, std::int32_t context, std::int32_t new_tokens,
               std::int64_t vocab) {
  return {std::move(name), bench::uniform_batch(seqs, context, new_tokens, vocab, kBlockSize)};
}

// A first prefill step of the throughput workload: whole prompts of 100-1,024 tokens (uniform,
// fixed seed) while they fit in `budget` tokens, on disjoint blocks.
Case make_ragged_prefill(std::int32_t budget, std::int64_t vocab) {
  BatchBuilder builder(kBlockSize);
  std::mt19937 rng(0);
  std::uniform_int_distribution<std::int32_t> length(100, 1024);
  std::int32_t total = 0, seqs = 0, next_block = 0;
  for (std::int32_t len = length(rng); total + len <= budget; len = length(rng), ++seqs) {
    std::vector<std::int32_t> table((len + kBlockSize - 1) / kBlockSize), tokens(len);
    for (auto& b : table) b = next_block++;
    for (std::int32_t i = 0; i < len; ++i)
      tokens[i] = static_cast<std::int32_t>((seqs * 7919 + i * 104729) % vocab);
    builder.add(tokens, 0, table);
    total += len;
  }
  return {"prefill " + std::to_string(seqs) + " prompts, " + std::to_string(total) + " tokens",
          builder.build()};
}

struct Timing {
  double step_ms = 0;     // events around forward(), median
  double enqueue_ms = 0;  // host time forward() took to return, median
  std::map<std::string, double> op_ms;  // per op, mean over the timed steps
};

Timing measure(Model& model, CudaOps& cuda, TimedOps& timed_ops, Model& timed_model,
               KvCacheView& kv, const Batch& batch) {
  Timing t;
  const auto steps = cuda.make_step_runner([&](const Batch& b) { return model.forward(b, kv); });
  const auto timed_steps =
      timed_ops.make_step_runner([&](const Batch& b) { return timed_model.forward(b, kv); });
  cudaEvent_t start, end;
  MV_CUDA_CHECK(cudaEventCreate(&start));
  MV_CUDA_CHECK(cudaEventCreate(&end));
  std::vector<double> step, enqueue;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    MV_CUDA_CHECK(cudaStreamSynchronize(cuda.stream()));
    MV_CUDA_CHECK(cudaEventRecord(start, cuda.stream()));
    const auto host_start = Clock::now();
    steps->run(batch);
    const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - host_start).count();
    MV_CUDA_CHECK(cudaEventRecord(end, cuda.stream()));
    MV_CUDA_CHECK(cudaEventSynchronize(end));
    float ms = 0;
    MV_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
    if (i >= kWarmup) {
      step.push_back(ms);
      enqueue.push_back(host_ms);
    }
  }
  MV_CUDA_CHECK(cudaEventDestroy(start));
  MV_CUDA_CHECK(cudaEventDestroy(end));
  t.step_ms = bench::median(step);
  t.enqueue_ms = bench::median(enqueue);
  timed_steps->run(batch);  // warm-up of the timed path
  timed_ops.take();
  for (int i = 0; i < kSteps; ++i) timed_steps->run(batch);
  for (const auto& [name, ms] : timed_ops.take()) t.op_ms[name] = ms / kSteps;
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  const auto args = bench::model_bench_args(argc, argv, "gpu_step_breakdown");
  if (const int* exit_code = std::get_if<int>(&args)) return *exit_code;
  const auto [model_dir, plugin_dir, context] = std::get<bench::ModelBenchArgs>(args);
  const auto plugins = PluginRegistry::load({plugin_dir});
  CudaOps cuda(DType::bf16);
  TimedOps timed_ops(cuda);
  auto loaded = load_model(plugins, model_dir, cuda);
  auto timed = load_model(plugins, model_dir, timed_ops);  // same weights, ops bracketed by events
  const std::int64_t vocab = loaded.config.vocab_size;

  std::vector<Case> cases;
  for (const std::int32_t seqs : bench::decode_sizes_that_fit(
           "gpu_step_breakdown", {1, 8, 64, 256}, context, loaded.model->kv_cache_spec()))
    cases.push_back(make_case("decode b=" + std::to_string(seqs) + " ctx=" + std::to_string(context),
                              seqs, context, 1, vocab));
  cases.push_back(make_case("prefill 1x128", 1, 128, 128, vocab));  // the TTFT target's prompt
  cases.push_back(make_case("prefill 1x1024", 1, 1024, 1024, vocab));
  cases.push_back(make_ragged_prefill(16384, vocab));
  std::int64_t max_blocks = 0;
  for (const Case& c : cases)
    max_blocks = std::max<std::int64_t>(max_blocks, c.batch.num_seqs() * c.batch.max_blocks_per_seq);
  auto kv = allocate_kv_cache(cuda, loaded.model->kv_cache_spec(), max_blocks, kBlockSize, DType::bf16);

  std::string json = "{\"context_len\": " + std::to_string(context) + ", \"cases\": [";
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    const Timing t = measure(*loaded.model, cuda, timed_ops, *timed.model, kv, c.batch);
    double ops_total = 0;
    for (const auto& [name, ms] : t.op_ms) ops_total += ms;
    std::printf("\n%s: step %.3f ms (GPU, events), forward() queued in %.3f ms (host)\n",
                c.name.c_str(), t.step_ms, t.enqueue_ms);
    std::printf("  %-18s %10s %7s\n", "op", "ms/step", "share");
    json += std::string(ci ? ", " : "") + "{\"case\": \"" + c.name + "\", \"step_ms\": " +
            std::to_string(t.step_ms) + ", \"enqueue_ms\": " + std::to_string(t.enqueue_ms) +
            ", \"ops_ms\": {";
    bool first = true;
    for (const auto& [name, ms] : t.op_ms) {
      std::printf("  %-18s %10.3f %6.1f%%\n", name.c_str(), ms, 100 * ms / t.step_ms);
      json += std::string(first ? "" : ", ") + "\"" + name + "\": " + std::to_string(ms);
      first = false;
    }
    const double idle = std::max(0.0, t.step_ms - ops_total);
    std::printf("  %-18s %10.3f %6.1f%%\n", "idle/launch", idle, 100 * idle / t.step_ms);
    json += "}, \"idle_ms\": " + std::to_string(idle) + "}";
  }
  std::printf("\n%s]}\n", json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu_step_breakdown: %s\n", e.what());
  return 1;
}
