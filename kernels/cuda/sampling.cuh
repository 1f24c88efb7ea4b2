#pragma once
// Token sampling on the GPU: one row of f32 logits in, one token id out, with the per-row
// settings of vLLM's sampler (min_p, top_k, top_p masks, greedy or random), logit adjustments
// (penalties, masked ids) given as a sparse list, and what log-probabilities need (the row's
// logsumexp, the chosen token's rank, the k largest logits). Rows are independent: a row's result
// depends only on its logits, its settings and its seed.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace minivllm::cuda {

// How one row is sampled. Plain values: the host fills an array of them.
struct SamplingRow {
  std::uint64_t seed = 0;     // the random draw's key (counter-based: no state on the device)
  float temperature = 0.0f;   // 0: greedy (argmax, ties to the lowest id)
  float top_p = 1.0f;         // >= 1: off
  float min_p = 0.0f;         // <= 0: off
  std::int32_t top_k = 0;     // <= 0 or >= vocab: off
  float repetition_penalty = 1.0f;  // for adjustments flagged kRepetition
  std::int32_t adjust_begin = 0;    // this row's entries of the adjustment list: [begin, end)
  std::int32_t adjust_end = 0;
  std::int32_t top_logprobs = -1;   // -1: none; else 0..kMaxTopLogprobs largest logits wanted
  std::int32_t top_slot = 0;        // where in `top` they go (when top_logprobs > 0)
};

// A change to one logit of one row, applied before sampling in this order: kMask sets it to
// -inf, kRepetition divides a positive logit by the row's repetition penalty and multiplies a
// negative one, then `subtract` is subtracted. At most one entry per (row, token).
struct LogitAdjustment {
  enum Flags : std::uint32_t { kMask = 1, kRepetition = 2 };
  std::int32_t token = 0;
  std::uint32_t flags = 0;
  float subtract = 0.0f;
  float saved = 0.0f;  // the kernel's scratch: the raw logit while the row holds the adjusted one
};

inline constexpr int kMaxTopLogprobs = 20;

// Device scratch that lets rows spread over several blocks: this many bytes, zeroed before
// the first launch that uses it (each launch leaves it ready for the next), used by one launch
// at a time.
inline constexpr std::size_t kSampleWorkspaceBytes = 32768;

// What sampling a row gives. Only rows with top_logprobs >= 0 get more than the token (the rest
// are 0): the other rows skip the logsumexp pass.
struct SampledRow {
  std::int32_t token = 0;
  float logsumexp = 0.0f;    // of the raw (unadjusted) logits
  float token_logit = 0.0f;  // raw logit of `token`
  std::int32_t rank = 0;     // 1 + raw logits above token_logit
};

// The largest raw logits of a row, largest first, ties to the lowest id.
struct TopLogits {
  std::int32_t ids[kMaxTopLogprobs];
  float logits[kMaxTopLogprobs];
};

// Samples each row of logits [rows, vocab] (f32, on the device) with params[rows]. Random rows
// draw from softmax(adjusted logits / temperature) restricted by min_p, then top_k (ties kept),
// then top_p (the smallest most-likely prefix, by probability then id, whose mass reaches
// top_p), renormalised. The adjusted entries of `logits` are written during the kernel and
// restored before it ends; `adjustments` must be device memory the kernel may write (`saved`).
// out[rows]; tokens[rows], when not null, gets each row's token again as a plain array (what a
// later step's embedding may read them from); top[] gets the k largest raw logits of each row
// with top_logprobs = k > 0 at its top_slot. Adjustments naming a token outside [0, vocab) are skipped; NaN logits give an
// unspecified token in [0, vocab). `workspace`: kSampleWorkspaceBytes (see there). The result
// is the same however many blocks a row gets.
cudaError_t launch_sample_rows(float* logits, std::int64_t rows, std::int64_t vocab,
                               const SamplingRow* params, LogitAdjustment* adjustments,
                               SampledRow* out, std::int32_t* tokens, TopLogits* top,
                               void* workspace, cudaStream_t stream);

}  // namespace minivllm::cuda
