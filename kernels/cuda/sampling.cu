#include "kernels/cuda/sampling.cuh"

#include <climits>
#include <cmath>
#include <cstdint>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/detail/dependent_launch.cuh"
#include "kernels/cuda/detail/device_facts.cuh"
#include "kernels/cuda/detail/philox.cuh"

// No sort of the vocabulary. Greedy and plain temperature rows (no min_p, top_k, top_p or
// logprobs) take one pass: the argmax of the adjusted logit, or of logit / T plus Gumbel noise
// from Philox at (seed, token), which samples softmax(logit / T) exactly with no normalisation.
// Such a row may be split over several blocks (as many as a model of the grid's waves picks),
// each reducing its slice to a candidate; the last block to finish (an atomic count per row)
// picks the winner. The order (score, then lowest id) is total, so the token does not depend on
// the split.
// A temperature row's noise is screened: most tokens never get the precise noise (see
// best_of_temperature_slice).
// Every other row gets one block (1024 threads). A pass reads the row once (float4 loads) and
// ends in a block reduction:
// 1. the argmax of the adjusted logits (greedy's token, random sampling's max) and the raw
//    logsumexp (a separate pass first when the row has adjustments, which are then written in
//    place and restored at the end);
// 2. top_k: the k-th largest logit by radix select (histogram passes over 11, 11 and 10 bits
//    of the float's order key). When every logit from the k-th's first-digit bin up fits in
//    shared memory (the usual small k), one more pass gathers them there and the rest of the
//    select and the draw run on them instead of the row;
// 3. the draw: Gumbel-max over the min_p / top_k survivors (argmax of logit / T plus noise from
//    Philox at (seed, token)), which samples their renormalised softmax exactly. top_p is a
//    rejection loop on top: the drawn token is kept when the mass ordered before it (larger
//    logit, or equal and lower id) is below top_p of the survivors' mass; otherwise it and
//    every token after it are out, and the draw repeats on the tokens before it with new noise.
//    Each round removes at least one token and the first token is always kept; at top_p = 0.95
//    a second round happens about one time in twenty. Masses are fixed point (u64, 2^-40 of the
//    max's weight) so sums are exact and the same in any order;
// 4. log-probabilities: the token's rank (a count) and the k largest raw logits (the same
//    radix select and gather, ties to the lowest ids, then a small sort).
namespace minivllm::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kCandidates = 2048;  // top_k survivors gathered into shared memory when they fit
constexpr int kRadixBins = 2048;   // 11-bit digits: 11 + 11 + 10 bits in three passes
constexpr int kMaxSplitBlocks = 2048;  // blocks of split rows in one launch, at most
constexpr int kMinSlice = 1024;        // logits per block of a split row, at least
// What a block costs beyond its slice (start, the first noise floor, the reductions, the merge),
// in logits' worth of scanning: the split balances this against idle SMs in the last wave.
constexpr std::int64_t kBlockCostLogits = 8192;
// A warp's logits per step of a temperature row (8 per lane); slices begin at multiples of it.
constexpr int kGroupLogits = 256;
constexpr int kWarps = kThreads / 32;

// Orders floats as unsigned ints: a < b exactly when key(a) < key(b); -0 counts as +0.
__device__ __forceinline__ std::uint32_t order_key(float v) {
  const std::uint32_t bits = __float_as_uint(v + 0.0f);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// A probability weight in [0, 1] as fixed point: exact, order-independent sums.
__device__ __forceinline__ unsigned long long fixed_point(float weight) {
  return __float2ull_rz(weight * 0x1p40f);
}

// Gumbel noise -log(E), E ~ Exp(1), from 32 random bits: argmax(score + noise) samples
// softmax(score). u stays inside (0, 1), so E is finite and positive.
__device__ __forceinline__ float gumbel(std::uint32_t bits) {
  const float u = __uint2float_rz(bits) * 0x1p-32f + 0x1p-33f;
  return -logf(-log1pf(-u));
}
// The order_key() of v back to v.
__device__ __forceinline__ float from_order_key(std::uint32_t key) {
  return __uint_as_float((key & 0x80000000u) != 0 ? key & 0x7FFFFFFFu : ~key);
}

// An upper bound on gumbel(bits) over the bits whose top 16 are `screen`: their u is at least
// max(screen, 2^-17) * 2^-16 (u >= 2^-33) and -log1p(-u) >= u, so gumbel <= -ln(that). The
// margin covers gumbel()'s roundings and lg2.approx's error (each under 1e-5).
__device__ __forceinline__ float gumbel_bound(std::uint32_t screen) {
  constexpr float kLn2 = 0.693147181f;
  const float s = __uint_as_float(0x4B000000u | screen) - 0x1p23f;  // exact: screen < 2^16
  return __fmaf_rn(__log2f(fmaxf(s, 0x1p-17f)), -kLn2, 16.0f * kLn2 + 1e-4f);
}

// A row's random words per token for one draw round: Philox at counter (id / 4, round) keyed by
// the row's seed, one word per id. Caches the last four (a thread's ids come in fours).
class TokenRandom {
 public:
  __device__ TokenRandom(std::uint64_t seed, std::uint32_t round) : seed_(seed), round_(round) {}

  __device__ std::uint32_t bits(int id) {
    const auto quad = static_cast<std::uint32_t>(id) >> 2;
    if (quad != quad_) {
      words_ = detail::philox4x32_10(make_uint4(quad, round_, 0, 0), seed_);
      quad_ = quad;
    }
    switch (id & 3) {
      case 0: return words_.x;
      case 1: return words_.y;
      case 2: return words_.z;
      default: return words_.w;
    }
  }

 private:
  std::uint64_t seed_;
  std::uint32_t round_;
  std::uint32_t quad_ = 0xFFFFFFFFu;  // no id maps to it
  uint4 words_ = {0, 0, 0, 0};
};

// The largest score, ties to the lowest id; `logit` rides along.
struct Pick {
  float score;
  int id;
  float logit;
};
constexpr Pick kNoPick = {-INFINITY, INT_MAX, -INFINITY};

__device__ __forceinline__ Pick better(const Pick& a, const Pick& b) {
  return b.score > a.score || (b.score == a.score && b.id < a.id) ? b : a;
}

// Running log-sum-exp: sum of exp(x - max), summed in double (a row is 150k terms).
struct LogSumExp {
  float max;
  double sum;

  __device__ void add(float x) {
    if (x == -INFINITY) return;
    if (x > max) {
      sum = sum * expf(max - x) + 1.0;
      max = x;
    } else {
      sum += expf(x - max);
    }
  }
  __device__ float value() const { return static_cast<float>(max + log(sum)); }
};
constexpr LogSumExp kEmptyLogSumExp = {-INFINITY, 0.0};

__device__ __forceinline__ LogSumExp merge(LogSumExp a, LogSumExp b) {
  if (a.max < b.max) {
    const LogSumExp t = a;
    a = b;
    b = t;
  }
  if (b.max == -INFINITY) return a;
  return {a.max, a.sum + b.sum * expf(b.max - a.max)};
}

// Pass 1's result: the argmax and the logsumexp.
struct Extremes {
  Pick best;
  LogSumExp lse;
};

// A draw round's result: the pick and (in the first round) the survivors' mass.
struct Draw {
  Pick pick;
  unsigned long long mass;
};

struct MergePicks {
  __device__ Pick operator()(const Pick& a, const Pick& b) const { return better(a, b); }
};
struct MergeLogSumExp {
  __device__ LogSumExp operator()(const LogSumExp& a, const LogSumExp& b) const {
    return merge(a, b);
  }
};
struct MergeExtremes {
  __device__ Extremes operator()(const Extremes& a, const Extremes& b) const {
    return {better(a.best, b.best), merge(a.lse, b.lse)};
  }
};
struct MergeDraws {
  __device__ Draw operator()(const Draw& a, const Draw& b) const {
    return {better(a.pick, b.pick), a.mass + b.mass};
  }
};
struct Sum {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a + b;
  }
};

template <class T>
using BlockReduce = cub::BlockReduce<T, kThreads>;
using BlockScan = cub::BlockScan<std::uint32_t, kThreads>;

struct Shared {
  union {
    BlockReduce<Pick>::TempStorage pick;
    BlockReduce<Extremes>::TempStorage extremes;
    BlockReduce<LogSumExp>::TempStorage lse;
    BlockReduce<Draw>::TempStorage draw;
    BlockReduce<unsigned long long>::TempStorage sum;
    BlockScan::TempStorage scan;
  } temp;
  union {  // one block-wide result, read by every thread
    Pick pick;
    Extremes extremes;
    LogSumExp lse;
    Draw draw;
    unsigned long long sum;
    struct {
      std::uint32_t bin, above, at;
    } found;
    bool last_part;  // whether this block is the last of its row's to finish
  } result;
  std::uint32_t histogram[kRadixBins];
  int num_candidates;
  int candidate_ids[kCandidates];
  float candidate_logits[kCandidates];
  int num_top;
  int top_ids[kMaxTopLogprobs];
  float top_logits[kMaxTopLogprobs];
  std::uint32_t best_key;  // a temperature slice's best score so far, as its order_key()
};

// Reduces v over the block with op; every thread gets the result.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, typename BlockReduce<T>::TempStorage& temp, T& result) {
  const T total = BlockReduce<T>(temp).Reduce(v, op);
  if (threadIdx.x == 0) result = total;
  __syncthreads();
  const T out = result;
  __syncthreads();  // temp and result are free again
  return out;
}

// Logits [begin, end) of a row in global memory, read four at a time when aligned.
struct RowLogits {
  const float* row;  // token id i at row[i]
  int begin, end;

  __device__ int size() const { return end - begin; }

  template <class F>
  __device__ void for_each(F&& f) const {
    int tail = begin;
    if ((reinterpret_cast<std::uintptr_t>(row + begin) & 15) == 0) {
      constexpr int kUnroll = 2;  // loads in flight per thread
      const int quads = (end - begin) / 4;
      const auto* row4 = reinterpret_cast<const float4*>(row + begin);
      for (int base = threadIdx.x; base < quads; base += kUnroll * kThreads) {
        float4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int q = base + u * kThreads;
          v[u] = q < quads ? row4[q] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int q = base + u * kThreads;
          if (q >= quads) break;
          const int id = begin + 4 * q;
          f(id, v[u].x);
          f(id + 1, v[u].y);
          f(id + 2, v[u].z);
          f(id + 3, v[u].w);
        }
      }
      tail = begin + quads * 4;
    }
    for (int i = tail + static_cast<int>(threadIdx.x); i < end; i += kThreads) f(i, row[i]);
  }
};

// The top_k survivors gathered in shared memory.
struct CandidateLogits {
  const int* ids;
  const float* logits;
  int n;

  template <class F>
  __device__ void for_each(F&& f) const {
    for (int i = threadIdx.x; i < n; i += kThreads) f(ids[i], logits[i]);
  }
};

// A radix select under way: the digits of the k-th largest key found so far, from the top.
struct RadixSelect {
  std::uint32_t prefix = 0;
  std::uint32_t prefix_mask = 0;
  std::uint32_t above = 0;  // elements with a larger key
  std::uint32_t at = 0;     // elements whose key starts with prefix
  int passes = 0;           // of 3: 11, 11 and 10 bits

  __device__ bool done() const { return passes == 3; }
  __device__ std::uint32_t key() const { return prefix; }  // once done
};

// One radix select pass for the k-th largest (1 <= k <= elements) of the keys that
// key_of(id, logit, &key) admits: a histogram of the next digit among the elements that match
// the prefix, and the bin where the count from the top reaches k.
template <class Source, class KeyOf>
__device__ void radix_pass(const Source& source, KeyOf key_of, std::uint32_t k, RadixSelect& s,
                           Shared& sh) {
  const int shift = s.passes == 0 ? 21 : (s.passes == 1 ? 10 : 0);
  const int bins = s.passes < 2 ? kRadixBins : kRadixBins / 2;
  for (int b = threadIdx.x; b < bins; b += kThreads) sh.histogram[b] = 0;
  __syncthreads();
  const std::uint32_t prefix = s.prefix, prefix_mask = s.prefix_mask;
  source.for_each([&](int id, float logit) {
    std::uint32_t key;
    if (key_of(id, logit, key) && (key & prefix_mask) == prefix)
      atomicAdd(&sh.histogram[(key >> shift) & (bins - 1)], 1u);
  });
  __syncthreads();
  // Thread t takes the bins_per_thread bins t-th from the top: a scan counts those above.
  const int per_thread = bins / kThreads;
  const int top_bin = bins - 1 - static_cast<int>(threadIdx.x) * per_thread;
  std::uint32_t mine = 0;
  for (int i = 0; i < per_thread; ++i) mine += sh.histogram[top_bin - i];
  std::uint32_t before = 0;
  BlockScan(sh.temp.scan).ExclusiveSum(mine, before);
  before += s.above;
  for (int i = 0; i < per_thread; ++i) {
    const std::uint32_t count = sh.histogram[top_bin - i];
    if (before < k && k <= before + count)
      sh.result.found = {static_cast<std::uint32_t>(top_bin - i), before, count};
    before += count;
  }
  __syncthreads();
  s.prefix |= sh.result.found.bin << shift;
  s.prefix_mask |= static_cast<std::uint32_t>(bins - 1) << shift;
  s.above = sh.result.found.above;
  s.at = sh.result.found.at;
  ++s.passes;
  __syncthreads();  // histogram, temp and result are reused
}

// Finishes radix select `s` on `source` (which must hold every element matching its prefix).
template <class Source, class KeyOf>
__device__ RadixSelect select_kth_largest(const Source& source, KeyOf key_of, std::uint32_t k,
                                          Shared& sh, RadixSelect s = {}) {
  while (!s.done()) radix_pass(source, key_of, k, s, sh);
  return s;
}

// select_kth_largest over every logit.
struct AnyLogit {
  __device__ bool operator()(int, float logit, std::uint32_t& key) const {
    key = order_key(logit);
    return true;
  }
};

// select_kth_largest over the logits equal to `key`, by id: the k-th largest is the k-th
// lowest id.
struct LowestIdsAt {
  std::uint32_t key;
  __device__ bool operator()(int id, float logit, std::uint32_t& id_key) const {
    id_key = ~static_cast<std::uint32_t>(id);
    return order_key(logit) == key;
  }
};

// Copies the logits of `row` that keep(id, logit) admits into the candidate arrays (at most
// kCandidates); returns them as a source.
template <class Keep>
__device__ CandidateLogits gather(const RowLogits& row, Keep keep, Shared& sh) {
  if (threadIdx.x == 0) sh.num_candidates = 0;
  __syncthreads();
  row.for_each([&](int id, float logit) {
    if (!keep(id, logit)) return;
    const int slot = atomicAdd(&sh.num_candidates, 1);
    if (slot >= kCandidates) return;
    sh.candidate_ids[slot] = id;
    sh.candidate_logits[slot] = logit;
  });
  __syncthreads();
  return {sh.candidate_ids, sh.candidate_logits,
          sh.num_candidates < kCandidates ? sh.num_candidates : kCandidates};
}

// The first digit of a radix select found a bin small enough that every element from it up fits
// in shared memory.
__device__ bool fits_in_shared_memory(const RadixSelect& s) {
  return s.above + s.at <= static_cast<std::uint32_t>(kCandidates);
}

// Elements whose key is at least the first digit found so far (after one pass).
struct FromFirstDigit {
  std::uint32_t floor;
  __device__ bool operator()(int, float logit) const { return order_key(logit) >= floor; }
};

// Which tokens survive min_p and top_k, and their unnormalised probability.
struct Filter {
  float max_logit;
  float inv_temperature;
  float min_p;            // 0: off
  std::uint32_t min_key;  // top_k's k-th largest key; 0: off

  __device__ bool keep(float logit, float& weight) const {
    if (order_key(logit) < min_key) return false;
    weight = expf((logit - max_logit) * inv_temperature);
    return weight >= min_p;
  }
};

// A random token of the survivors of `filter` in `source`, with top_p (see the top of the file).
template <class Source>
__device__ int draw_token(const Source& source, const Filter& filter, const SamplingRow& p,
                          Shared& sh) {
  const bool top_p = p.top_p < 1.0f;
  unsigned long long keep_below = 0;  // top_p keeps the tokens with less mass before them
  bool limited = false;               // whether the draw is limited to tokens before `limit`
  std::uint32_t limit_key = 0;
  int limit_id = 0;
  for (std::uint32_t round = 0;; ++round) {
    TokenRandom random(p.seed, round);
    Draw mine = {kNoPick, 0};
    source.for_each([&](int id, float logit) {
      float weight;
      if (!filter.keep(logit, weight)) return;
      if (round == 0) mine.mass += fixed_point(weight);
      if (limited) {
        const std::uint32_t key = order_key(logit);
        if (key < limit_key || (key == limit_key && id >= limit_id)) return;
      }
      const float score = (logit - filter.max_logit) * filter.inv_temperature +
                          gumbel(random.bits(id));
      mine.pick = better(mine.pick, {score, id, logit});
    });
    const Draw drawn = block_reduce(mine, MergeDraws{}, sh.temp.draw, sh.result.draw);
    const Pick pick = drawn.pick;
    if (!top_p) return pick.id;
    if (round == 0) {
      const double bound = ceil(static_cast<double>(p.top_p) * static_cast<double>(drawn.mass));
      keep_below = bound < 1.0 ? 1ull
                   : bound >= static_cast<double>(drawn.mass)
                       ? drawn.mass
                       : static_cast<unsigned long long>(bound);
    }
    const std::uint32_t pick_key = order_key(pick.logit);
    unsigned long long before = 0;
    source.for_each([&](int id, float logit) {
      float weight;
      if (!filter.keep(logit, weight)) return;
      const std::uint32_t key = order_key(logit);
      if (key > pick_key || (key == pick_key && id < pick.id)) before += fixed_point(weight);
    });
    before = block_reduce(before, Sum{}, sh.temp.sum, sh.result.sum);
    if (before < keep_below) return pick.id;
    limited = true;
    limit_key = pick_key;
    limit_id = pick.id;
  }
}

// Random sampling of a row whose largest (adjusted) logit is max_logit.
__device__ int sample_random(const RowLogits& row, const SamplingRow& p, float max_logit,
                             Shared& sh) {
  Filter filter = {max_logit, 1.0f / p.temperature, p.min_p > 0.0f ? p.min_p : 0.0f, 0};
  if (p.top_k <= 0 || p.top_k >= row.size()) return draw_token(row, filter, p, sh);
  const auto k = static_cast<std::uint32_t>(p.top_k);
  RadixSelect kth;
  radix_pass(row, AnyLogit{}, k, kth, sh);
  if (fits_in_shared_memory(kth)) {  // the usual top_k: the rest of the work in shared memory
    const CandidateLogits candidates = gather(row, FromFirstDigit{kth.prefix}, sh);
    filter.min_key = select_kth_largest(candidates, AnyLogit{}, k, sh, kth).key();
    return draw_token(candidates, filter, p, sh);
  }
  filter.min_key = select_kth_largest(row, AnyLogit{}, k, sh, kth).key();
  return draw_token(row, filter, p, sh);
}

// Applies (restore = false) or undoes (restore = true) the row's adjustments to tokens in
// [begin, end) in place.
__device__ void adjust_row(float* row, int begin, int end, LogitAdjustment* list,
                           const SamplingRow& p, bool restore) {
  for (int e = p.adjust_begin + static_cast<int>(threadIdx.x); e < p.adjust_end; e += kThreads) {
    LogitAdjustment& a = list[e];
    if (a.token < begin || a.token >= end) continue;
    if (restore) {
      row[a.token] = a.saved;
      continue;
    }
    float x = row[a.token];
    a.saved = x;
    if ((a.flags & LogitAdjustment::kMask) != 0) x = -INFINITY;
    // The CPU sampler's float operations, one rounding each (no fused multiply-add).
    if ((a.flags & LogitAdjustment::kRepetition) != 0)
      x = x > 0.0f ? __fdiv_rn(x, p.repetition_penalty) : __fmul_rn(x, p.repetition_penalty);
    row[a.token] = __fsub_rn(x, a.subtract);
  }
}

// Writes the k largest logits of `source` (which holds every element matching kth's prefix),
// largest first, ties to the lowest id.
template <class Source>
__device__ void write_top(const Source& source, std::uint32_t k, RadixSelect kth,
                          TopLogits& out, Shared& sh) {
  kth = select_kth_largest(source, AnyLogit{}, k, sh, kth);
  const std::uint32_t kth_key = kth.key(), ties_in = k - kth.above;
  int last_tie = INT_MAX;  // of the ties at kth_key, those with ids up to this one are in
  if (kth.at > ties_in)
    last_tie = static_cast<int>(~select_kth_largest(source, LowestIdsAt{kth_key}, ties_in, sh)
                                     .key());
  if (threadIdx.x == 0) sh.num_top = 0;
  __syncthreads();
  source.for_each([&](int id, float logit) {
    const std::uint32_t key = order_key(logit);
    if (key < kth_key || (key == kth_key && id > last_tie)) return;
    const int slot = atomicAdd(&sh.num_top, 1);
    if (slot >= kMaxTopLogprobs) return;
    sh.top_ids[slot] = id;
    sh.top_logits[slot] = logit;
  });
  __syncthreads();
  if (threadIdx.x != 0) return;
  const int n = sh.num_top < static_cast<int>(k) ? sh.num_top : static_cast<int>(k);
  for (int i = 0; i < n; ++i) {  // selection sort of at most 20
    int best = i;
    for (int j = i + 1; j < n; ++j)
      if (sh.top_logits[j] > sh.top_logits[best] ||
          (sh.top_logits[j] == sh.top_logits[best] && sh.top_ids[j] < sh.top_ids[best]))
        best = j;
    out.ids[i] = sh.top_ids[best];
    out.logits[i] = sh.top_logits[best];
    sh.top_ids[best] = sh.top_ids[i];
    sh.top_logits[best] = sh.top_logits[i];
  }
}

// The token's rank among the raw logits and, for top_logprobs > 0, the largest raw logits.
__device__ void rank_and_top(const RowLogits& row, const SamplingRow& p, float token_logit,
                             SampledRow& result, TopLogits* top, Shared& sh) {
  int k = p.top_logprobs < kMaxTopLogprobs ? p.top_logprobs : kMaxTopLogprobs;
  if (k > row.size()) k = row.size();
  unsigned long long above = 0;  // raw logits above the token's
  auto count_above = [&](float logit) {
    if (logit > token_logit) ++above;
  };
  if (k <= 0) {
    row.for_each([&](int, float logit) { count_above(logit); });
  } else {
    RadixSelect kth;
    radix_pass(row, AnyLogit{}, static_cast<std::uint32_t>(k), kth, sh);
    if (fits_in_shared_memory(kth)) {  // the usual case: the rank counted while gathering
      const FromFirstDigit from{kth.prefix};
      const CandidateLogits candidates = gather(
          row,
          [&](int id, float logit) {
            count_above(logit);
            return from(id, logit);
          },
          sh);
      write_top(candidates, static_cast<std::uint32_t>(k), kth, top[p.top_slot], sh);
    } else {
      row.for_each([&](int, float logit) { count_above(logit); });
      write_top(row, static_cast<std::uint32_t>(k), kth, top[p.top_slot], sh);
    }
  }
  above = block_reduce(above, Sum{}, sh.temp.sum, sh.result.sum);
  result.rank = static_cast<std::int32_t>(above) + 1;
}

// A row with min_p, top_k, top_p or logprobs, by one block (see the top of the file).
__device__ void sample_whole_row(float* row_data, int vocab, const SamplingRow& p,
                                 LogitAdjustment* adjustments, SampledRow& out,
                                 std::int32_t* token_out, TopLogits* top, Shared& sh) {
  const RowLogits row = {row_data, 0, vocab};
  const bool adjusted = p.adjust_end > p.adjust_begin;

  LogSumExp raw = kEmptyLogSumExp;
  if (adjusted) {
    row.for_each([&](int, float logit) { raw.add(logit); });
    raw = block_reduce(raw, MergeLogSumExp{}, sh.temp.lse, sh.result.lse);
    adjust_row(row_data, 0, vocab, adjustments, p, false);
    __syncthreads();
  }
  Extremes mine = {kNoPick, kEmptyLogSumExp};
  row.for_each([&](int id, float logit) {
    mine.best = better(mine.best, {logit, id, logit});
    if (!adjusted) mine.lse.add(logit);
  });
  const Extremes extremes = block_reduce(mine, MergeExtremes{}, sh.temp.extremes,
                                         sh.result.extremes);
  if (!adjusted) raw = extremes.lse;

  int token = p.temperature > 0.0f ? sample_random(row, p, extremes.best.logit, sh)
                                   : extremes.best.id;
  if (token < 0 || token >= vocab) token = 0;  // only NaN logits get here
  if (adjusted) {
    adjust_row(row_data, 0, vocab, adjustments, p, true);
    __syncthreads();
  }
  SampledRow result = {token, raw.value(), row_data[token], 0};
  if (p.top_logprobs >= 0) rank_and_top(row, p, result.token_logit, result, top, sh);
  if (threadIdx.x != 0) return;
  out = result;
  if (token_out != nullptr) *token_out = result.token;
}

// Whether one pass decides the row: greedy or plain temperature, no logprobs.
__device__ bool one_pass(const SamplingRow& p, int vocab) {
  return (p.top_k <= 0 || p.top_k >= vocab) && !(p.top_p < 1.0f) && !(p.min_p > 0.0f) &&
         p.top_logprobs < 0;
}

// One-pass score of a token with Gumbel noise: fma rounds once and is monotonic in the noise,
// so score(logit, t, gumbel_bound(screen)) bounds every score the token can get.
__device__ __forceinline__ float noisy_score(float logit, float inv_temperature, float noise) {
  return __fmaf_rn(logit, inv_temperature, noise);
}

// The one-pass winner of a greedy slice: the largest logit.
__device__ Pick best_logit_of_slice(const RowLogits& slice) {
  Pick mine = kNoPick;
  slice.for_each([&](int id, float logit) { mine = better(mine, {logit, id, logit}); });
  return mine;
}

// Logits [4 q, 4 q + 4) of a row; ids at or past `end` read as NaN, which no screen admits.
__device__ __forceinline__ float4 load_quad(const float* row, int q, int end, bool aligned) {
  if (aligned && 4 * q + 4 <= end) return reinterpret_cast<const float4*>(row)[q];
  float v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = 4 * q + k < end ? row[4 * q + k] : NAN;
  return make_float4(v[0], v[1], v[2], v[3]);
}

// Half j % 2 of word j / 2 of four random words: the 16 bits of a lane's token j.
__device__ __forceinline__ std::uint32_t half_word(const uint4& words, int j) {
  const std::uint32_t word = j < 2 ? words.x : j < 4 ? words.y : j < 6 ? words.z : words.w;
  return (j & 1) != 0 ? word >> 16 : word & 0xFFFFu;
}

// Philox streams (the counter's third word) of a temperature row's noise: the screen bits and
// the low bits.
constexpr std::uint32_t kScreenStream = 1, kLowStream = 2;

// The one-pass winner of a temperature row's slice [begin, end), begin a multiple of
// kGroupLogits: the largest logit / T + gumbel(bits). A token's 32 bits are 16 screen bits from
// one Philox call per 8 tokens and 16 low bits from another call, made only when needed: the
// screen bits alone bound the token's score (gumbel_bound), and a token whose bound is below a
// score reached in its row cannot win. The scores reached: the thread's best and the block's
// (shared, raised with atomicMax). Per 8 tokens the pass costs one Philox call and 8 lg2.approx;
// after a warp's first steps few tokens need their precise noise (two logs): about 1 in 10^4 of
// a 151936-wide row in one block, by a host model of this loop.
// Group g (kGroupLogits) of the row goes to one warp: lane l takes quads 64 g + l and
// 64 g + 32 + l (loads coalesce) and Philox counter 32 g + l, so the noise is a function of
// (seed, id) alone, the same however the row is split.
__device__ Pick best_of_temperature_slice(const float* row, int begin, int end,
                                          const SamplingRow& p, Shared& sh) {
  const float inv_temperature = 1.0f / p.temperature;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(row) & 15) == 0;
  if (threadIdx.x == 0) sh.best_key = order_key(-INFINITY);
  __syncthreads();
  const volatile std::uint32_t& block_best = sh.best_key;

  Pick mine = kNoPick;
  int group = begin / kGroupLogits + static_cast<int>(threadIdx.x) / 32;
  auto load = [&](int g, float4& a, float4& b) {  // a group's quads for this lane
    if (g * kGroupLogits >= end) return;
    a = load_quad(row, 64 * g + lane, end, aligned);
    b = load_quad(row, 64 * g + 32 + lane, end, aligned);
  };
  float4 a = {}, b = {};
  load(group, a, b);
  for (; group * kGroupLogits < end; group += kWarps) {
    const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    load(group + kWarps, a, b);  // the next group's loads fly while this one is screened
    const auto counter = static_cast<std::uint32_t>(32 * group + lane);
    const uint4 screen = detail::philox4x32_10(make_uint4(counter, 0, kScreenStream, 0), p.seed);
    float bound[8];
    float top = NAN;  // the largest bound (fmaxf skips NaN)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      bound[j] = noisy_score(x[j], inv_temperature, gumbel_bound(half_word(screen, j)));
      top = fmaxf(top, bound[j]);
    }
    float reached = fmaxf(mine.score, from_order_key(block_best));
    if (!(top >= reached)) continue;  // the usual case: no token here can win
    // The precise noise of the tokens whose bound reaches that score, largest bound first (it
    // raises the score reached fastest).
    const uint4 low = detail::philox4x32_10(make_uint4(counter, 0, kLowStream, 0), p.seed);
    do {
      Pick token = kNoPick;
      std::uint32_t bits = 0;
      bool found = false;
#pragma unroll
      for (int j = 0; j < 8; ++j) {  // the first token at `top`, taken out of the running
        if (found || !(bound[j] == top)) continue;
        found = true;
        token.id = 4 * (64 * group + 32 * (j / 4) + lane) + j % 4;
        token.logit = x[j];
        bits = half_word(screen, j) << 16 | half_word(low, j);
        bound[j] = NAN;
      }
      token.score = noisy_score(token.logit, inv_temperature, gumbel(bits));
      mine = better(mine, token);
      if (token.score > reached) {
        reached = token.score;
        atomicMax(&sh.best_key, order_key(reached));
      }
      top = NAN;
#pragma unroll
      for (int j = 0; j < 8; ++j) top = fmaxf(top, bound[j]);
    } while (top >= reached);
  }
  return mine;
}

// Candidates of the blocks of split rows, by row and part; a count of finished parts per row,
// back to 0 when the row is done.
struct SplitWorkspace {
  Pick picks[kMaxSplitBlocks];
  unsigned arrived[kMaxSplitBlocks / 2];  // split rows have two parts or more
};
static_assert(sizeof(SplitWorkspace) <= kSampleWorkspaceBytes);

// Another block's pick, read past this SM's L1 (which may hold an older copy).
__device__ Pick load_pick(const Pick& pick) {
  return {__ldcg(&pick.score), __ldcg(&pick.id), __ldcg(&pick.logit)};
}

// Part blockIdx.y of gridDim.y of a one-pass row: its slice's winner; the last part to finish
// merges the parts' winners and writes the token.
__device__ void sample_one_pass(float* row_data, int vocab, const SamplingRow& p,
                                LogitAdjustment* adjustments, SampledRow& out,
                                std::int32_t* token_out, SplitWorkspace* workspace, Shared& sh) {
  const int parts = static_cast<int>(gridDim.y), part = static_cast<int>(blockIdx.y);
  const int per_part =  // whole groups (which keep float4 alignment)
      ((vocab + parts - 1) / parts + kGroupLogits - 1) / kGroupLogits * kGroupLogits;
  const int begin = min(part * per_part, vocab), end = min(begin + per_part, vocab);
  const bool adjusted = p.adjust_end > p.adjust_begin;
  if (adjusted) {  // each part its own slice's tokens: no part writes what another reads
    adjust_row(row_data, begin, end, adjustments, p, false);
    __syncthreads();
  }
  const Pick mine = p.temperature > 0.0f
                        ? best_of_temperature_slice(row_data, begin, end, p, sh)
                        : best_logit_of_slice({row_data, begin, end});
  Pick best = block_reduce(mine, MergePicks{}, sh.temp.pick, sh.result.pick);
  if (adjusted) adjust_row(row_data, begin, end, adjustments, p, true);
  if (parts > 1) {
    const int row = static_cast<int>(blockIdx.x);
    if (threadIdx.x == 0) {
      workspace->picks[row * parts + part] = best;
      __threadfence();  // the pick is visible before the count says so
      sh.result.last_part = atomicAdd(&workspace->arrived[row], 1u) == parts - 1u;
    }
    __syncthreads();
    if (!sh.result.last_part || threadIdx.x != 0) return;
    __threadfence();
    for (int i = 0; i < parts; ++i)
      best = better(best, load_pick(workspace->picks[row * parts + i]));
    workspace->arrived[row] = 0;  // ready for the next launch
  }
  if (threadIdx.x != 0) return;
  SampledRow result = {};
  result.token = best.id >= 0 && best.id < vocab ? best.id : 0;  // only NaN logits fail
  out = result;
  if (token_out != nullptr) *token_out = result.token;
}

// Grid: (rows, parts). A whole-row row is sampled by its part 0 alone.
__global__ void __launch_bounds__(kThreads)
    sample_rows_kernel(float* logits, int vocab, const SamplingRow* params,
                       LogitAdjustment* adjustments, SampledRow* out, std::int32_t* tokens,
                       TopLogits* top, SplitWorkspace* workspace) {
  __shared__ Shared sh;
  detail::wait_for_prior_grids();
  detail::allow_dependents();
  const SamplingRow p = params[blockIdx.x];
  float* row_data = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;
  std::int32_t* token_out = tokens != nullptr ? tokens + blockIdx.x : nullptr;
  if (one_pass(p, vocab)) {
    sample_one_pass(row_data, vocab, p, adjustments, out[blockIdx.x], token_out, workspace, sh);
  } else if (blockIdx.y == 0) {
    sample_whole_row(row_data, vocab, p, adjustments, out[blockIdx.x], token_out, top, sh);
  }
}

// Blocks per one-pass row, each with at least kMinSlice logits: the count with the least
// modelled time, waves times (slice + kBlockCostLogits), a wave being one block of kThreads per
// SM. A few rows fill one wave; at 133 rows on an H200 (132 SMs), one block per row would leave
// the second wave nearly empty.
int parts_per_row(std::int64_t rows, std::int64_t vocab, int sm_count) {
  auto cost = [&](std::int64_t parts) {
    const std::int64_t waves = (rows * parts + sm_count - 1) / sm_count;
    return waves * ((vocab + parts - 1) / parts + kBlockCostLogits);
  };
  const std::int64_t by_vocab = (vocab + kMinSlice - 1) / kMinSlice;
  const std::int64_t by_workspace = kMaxSplitBlocks / rows;
  const std::int64_t most = by_vocab < by_workspace ? by_vocab : by_workspace;
  std::int64_t best = 1;
  for (std::int64_t parts = 2; parts <= most; ++parts)
    if (cost(parts) < cost(best)) best = parts;
  return static_cast<int>(best);
}

}  // namespace

cudaError_t launch_sample_rows(float* logits, std::int64_t rows, std::int64_t vocab,
                               const SamplingRow* params, LogitAdjustment* adjustments,
                               SampledRow* out, std::int32_t* tokens, TopLogits* top,
                               void* workspace, cudaStream_t stream) {
  if (rows < 0 || rows > INT_MAX || vocab <= 0 || vocab > INT_MAX / 2)
    return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (logits == nullptr || params == nullptr || out == nullptr || workspace == nullptr)
    return cudaErrorInvalidValue;
  int sm_count = 0;
  if (const cudaError_t err = detail::current_sm_count(sm_count); err != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>(rows),
                  static_cast<unsigned>(parts_per_row(rows, vocab, sm_count)));
  return detail::launch_dependent(sample_rows_kernel, grid, kThreads, 0, stream, logits,
                                  static_cast<int>(vocab), params, adjustments, out, tokens,
                                  top, static_cast<SplitWorkspace*>(workspace));
}

}  // namespace minivllm::cuda
