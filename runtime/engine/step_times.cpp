#include <minivllm/step_times.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

namespace minivllm {
namespace {

// Decode batch sizes grouped the way their cost changes: latency bound at a few rows, then the
// K/V reads grow with the rows.
constexpr std::array<std::pair<std::int32_t, std::int32_t>, 7> kDecodeRows{{
    {1, 1}, {2, 8}, {9, 32}, {33, 64}, {65, 128}, {129, 256},
    {257, std::numeric_limits<std::int32_t>::max()}}};

// Where the bucket of (decode, min_rows) is or goes: buckets stay ordered, prefill first, then
// decodes by rows.
std::vector<StepTimeBucket>::iterator bucket_at(std::vector<StepTimeBucket>& buckets, bool decode,
                                                std::int32_t min_rows) {
  return std::lower_bound(buckets.begin(), buckets.end(), std::pair{decode, min_rows},
                          [](const StepTimeBucket& b, const std::pair<bool, std::int32_t>& key) {
                            return std::pair{b.decode, b.min_rows} < key;
                          });
}

}  // namespace

std::size_t StepTimes::record(bool decode, std::int32_t rows, std::int32_t tokens,
                              double run_seconds, double launch_seconds, double gap_seconds) {
  std::int32_t min_rows = 1;
  std::int32_t max_rows = std::numeric_limits<std::int32_t>::max();
  if (decode) {
    const auto* range = std::find_if(kDecodeRows.begin(), kDecodeRows.end(),
                                     [&](const auto& r) { return rows <= r.second; });
    min_rows = range->first;
    max_rows = range->second;
  }
  auto it = bucket_at(buckets, decode, min_rows);
  if (it == buckets.end() || it->decode != decode || it->min_rows != min_rows) {
    StepTimeBucket fresh;
    fresh.decode = decode;
    fresh.min_rows = min_rows;
    fresh.max_rows = max_rows;
    it = buckets.insert(it, fresh);
  }
  ++it->steps;
  it->tokens += static_cast<std::uint64_t>(tokens);
  it->run_seconds += run_seconds;
  it->max_run_seconds = std::max(it->max_run_seconds, run_seconds);
  it->launch_seconds += launch_seconds;
  worker_gap_seconds += gap_seconds;
  return static_cast<std::size_t>(it - buckets.begin());
}

SchedulerTurn& SchedulerTurn::operator+=(const SchedulerTurn& other) {
  seconds += other.seconds;
  tokens_seconds += other.tokens_seconds;
  plan_seconds += other.plan_seconds;
  batch_seconds += other.batch_seconds;
  return *this;
}

SchedulerTurn SchedulerTurn::operator/(double divisor) const {
  return {seconds / divisor, tokens_seconds / divisor, plan_seconds / divisor,
          batch_seconds / divisor};
}

void StepTimes::add_scheduler_turn(std::size_t bucket, const SchedulerTurn& turn) {
  buckets.at(bucket).scheduler += turn;
  scheduler_seconds += turn.seconds;
  ++scheduler_steps;
}

void StepTimes::add(const StepTimes& other) {
  for (const StepTimeBucket& b : other.buckets) {
    auto it = bucket_at(buckets, b.decode, b.min_rows);
    if (it == buckets.end() || it->decode != b.decode || it->min_rows != b.min_rows) {
      buckets.insert(it, b);
      continue;
    }
    it->steps += b.steps;
    it->tokens += b.tokens;
    it->run_seconds += b.run_seconds;
    it->max_run_seconds = std::max(it->max_run_seconds, b.max_run_seconds);
    it->launch_seconds += b.launch_seconds;
    it->scheduler += b.scheduler;
  }
  worker_gap_seconds += other.worker_gap_seconds;
  scheduler_seconds += other.scheduler_seconds;
  scheduler_steps += other.scheduler_steps;
}

std::uint64_t StepTimes::steps() const {
  std::uint64_t n = 0;
  for (const StepTimeBucket& b : buckets) n += b.steps;
  return n;
}

double StepTimes::run_seconds() const {
  double s = 0;
  for (const StepTimeBucket& b : buckets) s += b.run_seconds;
  return s;
}

}  // namespace minivllm
