#include "backend/cpu_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace minivllm {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

bool below_min_tokens(const SamplerRow& row) {
  return static_cast<int>(row.output_ids.size()) < row.params->min_tokens;
}

// EOS (unless ignore_eos) and stop ids cannot be sampled before min_tokens.
void mask_stop_tokens(std::span<float> logits, const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  if (!below_min_tokens(row)) return;
  auto mask = [&](std::int32_t id) {
    if (id >= 0 && static_cast<std::size_t>(id) < logits.size()) logits[id] = neg_inf;
  };
  for (std::int32_t id : p.stop_token_ids) mask(id);
  if (!p.ignore_eos)
    for (std::int32_t id : row.eos_ids) mask(id);
}

// The first index of the largest value (ties go to the lowest id). Eight independent running
// maxima, then a search for the first match: std::max_element's one dependent compare-and-branch
// per value cost about 6 cycles each, which dominated greedy sampling on the host.
std::int32_t argmax(std::span<const float> v) {
  constexpr std::size_t kLanes = 8;
  float lane_max[kLanes];
  std::fill(lane_max, lane_max + kLanes, v[0]);
  std::size_t i = 0;
  for (; i + kLanes <= v.size(); i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lane_max[l] = std::max(lane_max[l], v[i + l]);
  float best = *std::max_element(lane_max, lane_max + kLanes);
  for (; i < v.size(); ++i) best = std::max(best, v[i]);
  auto it = std::find(v.begin(), v.end(), best);
  if (it == v.end()) it = std::max_element(v.begin(), v.end());  // a NaN hid the maximum
  return static_cast<std::int32_t>(it - v.begin());
}

// Uniform in [0, 1) from 53 random bits: the same on every standard library.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::int32_t draw(const std::vector<double>& probs, std::mt19937_64& rng) {
  const double target = uniform01(rng);
  double cum = 0.0;
  std::int32_t last_nonzero = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0) continue;
    last_nonzero = static_cast<std::int32_t>(i);
    cum += probs[i];
    if (target < cum) return last_nonzero;
  }
  return last_nonzero;  // rounding left target past the total
}

void normalise(std::vector<double>& probs) {
  const double total = std::accumulate(probs.begin(), probs.end(), 0.0);
  for (double& p : probs) p /= total;
}

// The general path: masks and penalties on a copy of the logits, then greedy or a draw.
std::int32_t sample_changed_logits(const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  std::vector<float> work(row.logits.begin(), row.logits.end());
  mask_stop_tokens(work, row);
  apply_penalties(work, p, row.prompt_ids, row.output_ids);
  return p.greedy() ? argmax(work) : draw(sampling_probs(work, p), *row.rng);
}

}  // namespace

void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     std::span<const std::int32_t> prompt_ids,
                     std::span<const std::int32_t> output_ids) {
  if (!params.has_penalties()) return;
  const bool repetition = params.repetition_penalty_value() != 1.0;
  std::unordered_map<std::int32_t, int> output_counts;
  for (std::int32_t id : output_ids) ++output_counts[id];
  if (repetition) {
    const auto rp = static_cast<float>(params.repetition_penalty_value());
    std::vector<bool> seen(logits.size(), false);
    auto penalise = [&](std::int32_t id) {
      if (seen[id]) return;
      seen[id] = true;
      logits[id] = logits[id] > 0 ? logits[id] / rp : logits[id] * rp;
    };
    for (std::int32_t id : prompt_ids) penalise(id);
    for (std::int32_t id : output_ids) penalise(id);
  }
  for (const auto& [id, count] : output_counts)
    logits[id] -= static_cast<float>(params.frequency_penalty * count + params.presence_penalty);
}

std::vector<double> sampling_probs(std::span<const float> logits, const SamplingParams& params) {
  const std::size_t vocab = logits.size();
  std::vector<double> probs(vocab);
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  for (std::size_t i = 0; i < vocab; ++i)
    probs[i] = std::exp((logits[i] - max_logit) / params.temperature_value());
  normalise(probs);

  if (params.min_p_value() > 0.0) {
    const double threshold = params.min_p_value() * *std::max_element(probs.begin(), probs.end());
    for (double& p : probs)
      if (p < threshold) p = 0.0;
  }
  if (params.top_k_value() > 0 && static_cast<std::size_t>(params.top_k_value()) < vocab) {
    // Keep every token at least as likely as the k-th (ties included, like vLLM).
    std::vector<double> sorted = probs;
    std::nth_element(sorted.begin(), sorted.begin() + (params.top_k_value() - 1), sorted.end(),
                     std::greater<>());
    const double kth = sorted[params.top_k_value() - 1];
    for (double& p : probs)
      if (p < kth) p = 0.0;
  }
  normalise(probs);
  if (params.top_p_value() < 1.0) {
    // Keep the most likely tokens until their mass reaches top_p (the crossing one included).
    std::vector<std::int32_t> order;
    for (std::size_t i = 0; i < vocab; ++i)
      if (probs[i] > 0.0) order.push_back(static_cast<std::int32_t>(i));
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
    });
    double before = 0.0;
    for (std::int32_t id : order) {
      if (before >= params.top_p_value()) {
        probs[id] = 0.0;
      } else {
        before += probs[id];
      }
    }
    normalise(probs);
  }
  return probs;
}

PositionLogprobs position_logprobs(std::span<const float> logits, std::int32_t chosen, int k) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(x - max_logit);
  const double lse = max_logit + std::log(sum);
  auto logprob_of = [&](std::int32_t id) { return static_cast<float>(logits[id] - lse); };

  PositionLogprobs out;
  out.chosen = {chosen, logprob_of(chosen),
                1 + static_cast<int>(std::count_if(logits.begin(), logits.end(),
                                                   [&](float x) { return x > logits[chosen]; }))};
  const auto top = static_cast<std::size_t>(std::min<std::size_t>(k, logits.size()));
  std::vector<std::int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  for (std::size_t r = 0; r < top; ++r)
    out.top.push_back({ids[r], logprob_of(ids[r]), static_cast<int>(r) + 1});
  return out;
}

SampledToken sample_row(const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  // Without masks or penalties a greedy row's token is the argmax of the model's own row: no
  // copy (the common decode row).
  const bool logits_as_is = p.greedy() && !p.has_penalties() && !below_min_tokens(row);
  SampledToken out;
  out.token = logits_as_is ? argmax(row.logits) : sample_changed_logits(row);
  if (p.logprobs) out.logprobs = position_logprobs(row.logits, out.token, *p.logprobs);
  return out;
}

std::vector<SampledToken> sample_batch(std::span<const SamplerRow> rows) {
  std::vector<SampledToken> out;
  out.reserve(rows.size());
  for (const SamplerRow& row : rows) out.push_back(sample_row(row));
  return out;
}

}  // namespace minivllm
