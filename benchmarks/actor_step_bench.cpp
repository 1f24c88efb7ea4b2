// The whole CPU side of one decode step through the actors (engine, scheduler, worker:
// schedule, batch preparation, the StepWork/StepResult messages, sampling, stop checks, outputs
// to the engine) with a model that does no arithmetic (zero logits, tiny vocabulary).
// Wall-clock µs per decode step at NUM_SEQS running sequences: two runs that differ only in
// max_tokens, so start-up, prefill and finishing cancel out. Also the CPU time of all threads per
// step (steadier than wall time on a shared machine: it counts work, not waiting for a core), where
// the step's time goes (the engine's step times: the worker running a step, the worker waiting
// between steps, the scheduler's turn), and the CPU time the runtime burns once idle (threads
// that spin a while before they sleep). Not run by the tests.
//   actor_step_bench [NUM_SEQS=256] [SHORT=100] [LONG=600] [REPEATS=5]  (prints the median)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <thread>
#include <vector>

#include <minivllm/llm.hpp>

namespace {

using namespace minivllm;

constexpr int kVocab = 32;
constexpr int kBlockSize = 16;
constexpr int kPromptLen = 16;

// Logits are zeros: the step costs only what the runtime around the model costs.
class NullModelRunner final : public ModelRunner {
 public:
  int vocab_size() const override { return kVocab; }
  std::span<const float> execute(const Batch& batch) override {
    logits_.assign(batch.logits_rows.size() * kVocab, 0.0f);
    return logits_;
  }

 private:
  std::vector<float> logits_;
};

struct Run {
  double seconds = 0;
  double cpu_seconds = 0;  // every thread of the process, user and system
  std::uint64_t steps = 0;
  StepTimes times;
  double idle_cpu_seconds = 0;  // in kIdleWindow after the requests were done
};

constexpr std::chrono::milliseconds kIdleWindow{200};

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Run run(int num_seqs, int max_tokens, bool measure_idle = false) {
  RuntimeSpec spec;
  const int max_len = kPromptLen + max_tokens;
  const int blocks = num_seqs * ((max_len + kBlockSize - 1) / kBlockSize);
  spec.engine.scheduler = {num_seqs, 8192, max_len, true};
  spec.engine.cache = {kBlockSize, blocks, true};
  spec.make_runner = [] { return std::make_unique<NullModelRunner>(); };
  LLM llm(std::move(spec));
  std::vector<std::vector<std::int32_t>> prompts;
  for (int i = 0; i < num_seqs; ++i) {
    std::vector<std::int32_t>& p = prompts.emplace_back();
    for (int k = 0; k < kPromptLen; ++k) p.push_back((i * 13 + k * 7) % kVocab);  // distinct prompts
  }
  SamplingParams params;
  params.temperature = 0.0;
  params.max_tokens = max_tokens;
  params.ignore_eos = true;
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  llm.generate(prompts, params);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.cpu_seconds = process_cpu_seconds() - cpu_start;
  EngineStats stats = llm.stats();
  r.steps = stats.num_steps;
  r.times = std::move(stats.step_times);
  if (measure_idle) {
    const double idle_start = process_cpu_seconds();
    std::this_thread::sleep_for(kIdleWindow);
    r.idle_cpu_seconds = process_cpu_seconds() - idle_start;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int num_seqs = argc > 1 ? std::atoi(argv[1]) : 256;
  const int short_tokens = argc > 2 ? std::atoi(argv[2]) : 100;
  const int long_tokens = argc > 3 ? std::atoi(argv[3]) : 600;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
  const Run warm_up = run(num_seqs, 10, true);
  std::printf("idle: %.0f us of CPU in the first %lld ms after the requests were done\n",
              warm_up.idle_cpu_seconds * 1e6, static_cast<long long>(kIdleWindow.count()));
  // The box is shared: each pair is noisy, their median less so.
  std::vector<double> us_per_step, cpu_us_per_step;
  for (int i = 0; i < repeats; ++i) {
    const Run a = run(num_seqs, short_tokens);
    const Run b = run(num_seqs, long_tokens);
    const auto steps = static_cast<double>(b.steps - a.steps);
    auto per_step_us = [&](double long_seconds, double short_seconds) {
      return (long_seconds - short_seconds) * 1e6 / steps;
    };
    us_per_step.push_back(per_step_us(b.seconds, a.seconds));
    cpu_us_per_step.push_back(per_step_us(b.cpu_seconds, a.cpu_seconds));
    std::printf("%d seqs: %llu steps in %.3f s, %llu steps in %.3f s -> %.1f us per decode step "
                "(CPU time of all threads: %.1f us; worker running a step %.1f us, between steps "
                "%.1f us; scheduler %.1f us)\n",
                num_seqs, static_cast<unsigned long long>(a.steps), a.seconds,
                static_cast<unsigned long long>(b.steps), b.seconds, us_per_step.back(),
                cpu_us_per_step.back(),
                per_step_us(b.times.run_seconds(), a.times.run_seconds()),
                per_step_us(b.times.worker_gap_seconds, a.times.worker_gap_seconds),
                per_step_us(b.times.scheduler_seconds, a.times.scheduler_seconds));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("{\"bench\": \"actor_step\", \"num_seqs\": %d, \"us_per_decode_step\": %.2f, "
              "\"cpu_us_per_decode_step\": %.2f}\n",
              num_seqs, median(us_per_step), median(cpu_us_per_step));
}
