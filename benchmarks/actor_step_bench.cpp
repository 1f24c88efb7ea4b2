// The whole CPU side of one decode step through the actors (engine, scheduler, worker:
// schedule, batch preparation, the StepWork/StepResult messages, sampling, stop checks, outputs
// to the engine) with a model that does no arithmetic (zero logits, tiny vocabulary).
// Wall-clock µs per decode step at NUM_SEQS running sequences: two runs that differ only in
// max_tokens, so start-up, prefill and finishing cancel out. Also the CPU time of all threads per
// step (steadier than wall time on a shared machine: it counts work, not waiting for a core), where
// the step's time goes (the engine's step times: the worker running a step, the worker waiting
// between steps, the scheduler's turn), and the CPU time the runtime burns once idle (threads
// that spin a while before they sleep). And the scheduler's turn per decode step of NUM_SEQS rows
// (issue 9's figure, as `minivllm bench throughput` prints it). DEVICE_US > 0 makes every step
// take that long on the worker, as on a GPU: the scheduler's thread then sleeps through each step
// and its turn starts cold, which is what the GPU machine's throughput runs see. EVICT_KB > 0
// makes it cold on a machine where sleeping alone does not (this 2-core build box): through each
// step's device time another thread streams over a buffer of that size, larger than the caches
// (`lscpu`), evicting the scheduler's data as the GPU host's other threads and cores do. Not run
// by the tests.
//   actor_step_bench [NUM_SEQS=256] [SHORT=100] [LONG=600] [REPEATS=5] [DEVICE_US=0]
//                    [BLOCK_SIZE=16] [EVICT_KB=0]  (prints the medians)
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include <minivllm/llm.hpp>

#include "actors/runtime_spec.hpp"

namespace {

using namespace minivllm;

constexpr int kVocab = 32;
constexpr int kPromptLen = 16;

using Clock = std::chrono::steady_clock;

// A thread that, each time it is woken with a deadline, reads and writes every cache line of its
// buffer over and over until then: whatever else was cached (on the core it runs on, and in the
// shared last level) is evicted by the time the deadline passes.
class CacheEvictor {
 public:
  // bytes: rounded up to a multiple of 64 KB.
  explicit CacheEvictor(std::size_t bytes)
      : buffer_((bytes + kChunkBytes - 1) / kChunkBytes * kChunkBytes / sizeof(std::uint64_t), 1),
        thread_([this] { loop(); }) {}
  ~CacheEvictor() {
    stop_.store(true);
    wake(Clock::now());
    thread_.join();
  }
  // Streams until `until` (returns at once; the streaming runs on the evictor's thread).
  void wake(Clock::time_point until) {
    until_.store(until.time_since_epoch().count());
    generation_.fetch_add(1);
    generation_.notify_one();
  }

 private:
  static constexpr std::size_t kChunkBytes = 64 * 1024;  // streamed between looks at the clock

  void loop() {
    constexpr std::size_t kLine = 64 / sizeof(std::uint64_t);
    constexpr std::size_t kChunk = kChunkBytes / sizeof(std::uint64_t);
    std::uint64_t seen = 0;
    std::size_t at = 0;  // goes on where the last step's streaming stopped
    while (true) {
      generation_.wait(seen);
      seen = generation_.load();
      if (stop_.load()) return;
      const Clock::time_point until{Clock::duration{until_.load()}};
      while (Clock::now() < until) {
        for (const std::size_t end = at + kChunk; at < end; at += kLine)
          buffer_[at] += buffer_[at + kLine - 1];
        if (at >= buffer_.size()) at = 0;
      }
    }
  }

  std::vector<std::uint64_t> buffer_;
  std::atomic<Clock::rep> until_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the rest is built
};

// Logits are zeros: the step costs only what the runtime around the model costs. It reads the
// whole batch, as a device runner copies it to the device (the batch's lines are then in the
// worker's core when the scheduler refills them, as in a GPU run). With a device time it then
// busy-waits that long, as a worker waiting on a GPU does (the scheduler's turn then starts on a
// core that sat idle through the step, as on the GPU machine), while the evictor, if any, streams
// its buffer.
class NullModelRunner final : public ModelRunner {
 public:
  NullModelRunner(std::chrono::microseconds device_time, std::size_t evict_bytes)
      : device_time_(device_time),
        evictor_(evict_bytes > 0 ? std::make_unique<CacheEvictor>(evict_bytes) : nullptr) {}
  int vocab_size() const override { return kVocab; }
  std::span<const float> execute(const Batch& batch) override {
    read_ += sum(batch.token_ids) + sum(batch.positions) + sum(batch.slot_mapping) +
             sum(batch.query_start) + sum(batch.context_lens) + sum(batch.block_tables) +
             sum(batch.logits_rows);
    const auto until = Clock::now() + device_time_;
    if (evictor_ && device_time_.count() > 0) evictor_->wake(until);
    while (Clock::now() < until) {
    }
    logits_.assign(batch.logits_rows.size() * kVocab, 0.0f);
    return logits_;
  }

 private:
  template <class T>
  static std::int64_t sum(const std::vector<T>& v) {
    std::int64_t s = 0;
    for (T x : v) s += x;
    return s;
  }

  std::int64_t read_ = 0;  // what the reads add up to, kept so that they are not left out
  std::chrono::microseconds device_time_;
  std::unique_ptr<CacheEvictor> evictor_;
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

struct Settings {
  int num_seqs = 256;
  int block_size = 16;
  std::chrono::microseconds device_time{0};
  std::size_t evict_bytes = 0;
};

Run run(const Settings& set, int max_tokens, bool measure_idle = false) {
  RuntimeSpec spec;
  const int max_len = kPromptLen + max_tokens;
  // Twice what the sequences hold at their longest: a GPU run's cache has room to spare (the
  // scheduler's look-ahead then needs no count of the blocks the next decodes take).
  const int blocks = 2 * set.num_seqs * ((max_len + set.block_size - 1) / set.block_size);
  spec.engine.scheduler = {set.num_seqs, 8192, max_len, true};
  spec.engine.cache = {set.block_size, blocks, true};
  spec.make_runner = [t = set.device_time, e = set.evict_bytes, blocks](const WorkerPlace&) {
    return LoadedRunner{std::make_unique<NullModelRunner>(t, e), blocks};
  };
  LLM llm(std::move(spec));
  std::vector<std::vector<std::int32_t>> prompts;
  for (int i = 0; i < set.num_seqs; ++i) {
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

// The scheduler's turn per decode step of `rows` sequences (issue 9's figure) and its phases.
SchedulerTurn decode_turn(const StepTimes& times, int rows) {
  for (const StepTimeBucket& b : times.buckets)
    if (b.decode && b.min_rows <= rows && rows <= b.max_rows && b.steps > 0)
      return b.scheduler / static_cast<double>(b.steps);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Settings set;
  set.num_seqs = argc > 1 ? std::atoi(argv[1]) : 256;
  const int short_tokens = argc > 2 ? std::atoi(argv[2]) : 100;
  const int long_tokens = argc > 3 ? std::atoi(argv[3]) : 600;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
  set.device_time = std::chrono::microseconds(argc > 5 ? std::atoi(argv[5]) : 0);
  set.block_size = argc > 6 ? std::atoi(argv[6]) : 16;
  set.evict_bytes = static_cast<std::size_t>(argc > 7 ? std::atoll(argv[7]) : 0) * 1024;
  const Run warm_up = run(set, 10, true);
  std::printf("idle: %.0f us of CPU in the first %lld ms after the requests were done\n",
              warm_up.idle_cpu_seconds * 1e6, static_cast<long long>(kIdleWindow.count()));
  // The box is shared: each pair is noisy, their median less so.
  std::vector<double> us_per_step, cpu_us_per_step, turn_us, tokens_us, plan_us, batch_us;
  for (int i = 0; i < repeats; ++i) {
    const Run a = run(set, short_tokens);
    const Run b = run(set, long_tokens);
    const auto steps = static_cast<double>(b.steps - a.steps);
    auto per_step_us = [&](double long_seconds, double short_seconds) {
      return (long_seconds - short_seconds) * 1e6 / steps;
    };
    us_per_step.push_back(per_step_us(b.seconds, a.seconds));
    cpu_us_per_step.push_back(per_step_us(b.cpu_seconds, a.cpu_seconds));
    const SchedulerTurn turn = decode_turn(b.times, set.num_seqs);
    turn_us.push_back(turn.seconds * 1e6);
    tokens_us.push_back(turn.tokens_seconds * 1e6);
    plan_us.push_back(turn.plan_seconds * 1e6);
    batch_us.push_back(turn.batch_seconds * 1e6);
    std::printf("%d seqs: %llu steps in %.3f s, %llu steps in %.3f s -> %.1f us per decode step "
                "(CPU time of all threads: %.1f us; worker running a step %.1f us, between steps "
                "%.1f us; scheduler %.1f us; its turn per %d-row decode step %.1f us: tokens "
                "%.1f, plan %.1f, batch %.1f)\n",
                set.num_seqs, static_cast<unsigned long long>(a.steps), a.seconds,
                static_cast<unsigned long long>(b.steps), b.seconds, us_per_step.back(),
                cpu_us_per_step.back(),
                per_step_us(b.times.run_seconds(), a.times.run_seconds()),
                per_step_us(b.times.worker_gap_seconds, a.times.worker_gap_seconds),
                per_step_us(b.times.scheduler_seconds, a.times.scheduler_seconds), set.num_seqs,
                turn_us.back(), tokens_us.back(), plan_us.back(), batch_us.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("{\"bench\": \"actor_step\", \"num_seqs\": %d, \"device_us\": %lld, "
              "\"block_size\": %d, \"evict_kb\": %zu, \"us_per_decode_step\": %.2f, "
              "\"cpu_us_per_decode_step\": %.2f, \"scheduler_turn_us\": %.2f, "
              "\"turn_tokens_us\": %.2f, \"turn_plan_us\": %.2f, \"turn_batch_us\": %.2f}\n",
              set.num_seqs, static_cast<long long>(set.device_time.count()), set.block_size,
              set.evict_bytes / 1024, median(us_per_step), median(cpu_us_per_step),
              median(turn_us), median(tokens_us), median(plan_us), median(batch_us));
}
