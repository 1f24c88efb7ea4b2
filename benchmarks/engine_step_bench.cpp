// Engine hot-loop cost: CPU time of one decode step's schedule + block bookkeeping + input
// preparation (StepPlan -> Batch), with N running sequences of about T tokens each (block size
// 16), prefix caching on and off. No model runs: the step's sampled token is appended by hand.
// Prints a table and one JSON line per configuration. Not run by the tests.
//   engine_step_bench [NUM_SEQS=256] [TOKENS=1000] [STEPS=160]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <minivllm/batch.hpp>

#include "engine/prepare_batch.hpp"
#include "engine/scheduler.hpp"

namespace {

using namespace minivllm;

constexpr int kBlockSize = 16;
constexpr int kBudget = 8192;  // max_num_batched_tokens

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

struct Phases {
  double schedule = 0, prepare = 0, finish = 0;
  double total() const { return schedule + prepare + finish; }
};

struct Result {
  double median_us, mean_us, wall_median_us;
  Phases mean;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

Result run(int num_seqs, int tokens, int steps, bool prefix_caching) {
  const int warmup = 16;
  // Early sequences decode while later ones still prefill: leave room for that too, so that
  // nothing is ever preempted.
  const int max_tokens = warmup + steps + num_seqs * tokens / kBudget + 16;
  const int blocks_per_seq = BlockManager::blocks_for(tokens + max_tokens, kBlockSize);
  Scheduler scheduler({num_seqs, kBudget, tokens + max_tokens, true},
                      {kBlockSize, num_seqs * blocks_per_seq, prefix_caching});
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = max_tokens;
  std::mt19937 rng(7);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < num_seqs; ++i) {
    std::vector<std::int32_t> prompt(tokens);
    for (auto& t : prompt) t = static_cast<std::int32_t>(rng() % 150000);
    seqs.push_back(
        std::make_unique<Sequence>(i, std::to_string(i), 0, std::move(prompt), params, 0));
    scheduler.add(seqs.back().get());
  }
  Batch batch;
  std::vector<Phases> phases;
  std::vector<double> wall;
  for (int step = 0;; ++step) {
    const auto w0 = std::chrono::steady_clock::now();
    const double t0 = thread_cpu_us();
    const StepPlan plan = scheduler.schedule();
    const double t1 = thread_cpu_us();
    prepare_batch(plan, kBlockSize, batch);
    const double t2 = thread_cpu_us();
    scheduler.finish_step(plan);
    const double t3 = thread_cpu_us();
    const auto w1 = std::chrono::steady_clock::now();
    if (!plan.preempted.empty()) {
      std::fprintf(stderr, "engine_step_bench: a sequence was preempted; the cache is too small\n");
      std::exit(1);
    }
    bool all_decodes = plan.seqs.size() == static_cast<std::size_t>(num_seqs);
    for (const ScheduledSequence& s : plan.seqs) {
      all_decodes = all_decodes && s.num_new_tokens == 1;
      if (s.sample) s.seq->append_token(1);
    }
    if (!all_decodes) continue;  // still prefilling
    if (static_cast<int>(phases.size()) + 1 > warmup + steps) break;
    phases.push_back({t1 - t0, t2 - t1, t3 - t2});
    wall.push_back(std::chrono::duration<double, std::micro>(w1 - w0).count());
  }
  phases.erase(phases.begin(), phases.begin() + warmup);
  wall.erase(wall.begin(), wall.begin() + warmup);

  Result r{};
  std::vector<double> totals;
  for (const Phases& p : phases) {
    totals.push_back(p.total());
    r.mean.schedule += p.schedule / phases.size();
    r.mean.prepare += p.prepare / phases.size();
    r.mean.finish += p.finish / phases.size();
  }
  r.median_us = median(totals);
  r.mean_us = r.mean.total();
  r.wall_median_us = median(wall);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int num_seqs = argc > 1 ? std::atoi(argv[1]) : 256;
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 160;
  std::printf("decode step, %d sequences of ~%d tokens, block size %d, %d steps (CPU us)\n",
              num_seqs, tokens, kBlockSize, steps);
  std::printf("%-15s %10s %10s %10s %10s %10s %12s\n", "prefix_caching", "median", "mean",
              "schedule", "prepare", "finish", "wall_median");
  std::vector<std::string> json;
  for (const bool pc : {true, false}) {
    const Result r = run(num_seqs, tokens, steps, pc);
    std::printf("%-15s %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f\n", pc ? "on" : "off",
                r.median_us, r.mean_us, r.mean.schedule, r.mean.prepare, r.mean.finish,
                r.wall_median_us);
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"bench\":\"engine_step\",\"num_seqs\":%d,\"tokens\":%d,\"block_size\":%d,"
                  "\"prefix_caching\":%s,\"steps\":%d,\"cpu_us_median\":%.2f,\"cpu_us_mean\":%.2f,"
                  "\"schedule_us\":%.2f,\"prepare_us\":%.2f,\"finish_us\":%.2f,"
                  "\"wall_us_median\":%.2f}",
                  num_seqs, tokens, kBlockSize, pc ? "true" : "false", steps, r.median_us,
                  r.mean_us, r.mean.schedule, r.mean.prepare, r.mean.finish, r.wall_median_us);
    json.emplace_back(line);
  }
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return 0;
}
