#pragma once
// One completion being generated: its tokens, its place in the KV cache, its stop state.
// A request with n > 1 becomes n sequences that share the prompt.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/logprobs.hpp"
#include "engine/sampling_params.hpp"

namespace minivllm {

using SeqId = std::uint64_t;

enum class SequenceStatus : std::uint8_t { waiting, running, finished };
enum class FinishReason : std::uint8_t { none, stop, length, abort };

const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", or "" for none

class alignas(64) Sequence {
 public:
  Sequence(SeqId id, std::string request_id, int index, std::vector<std::int32_t> prompt,
           std::shared_ptr<const SamplingParams> params, std::uint64_t rng_seed);

  SeqId id() const { return id_; }
  const std::string& request_id() const { return request_id_; }
  int index() const { return index_; }  // completion index within its request
  const SamplingParams& params() const { return *params_; }
  // What each step asks of params(), copied at construction: the step then reads the sequence's
  // hot state only, not the parameters (another cache line per sequence).
  bool wants_logprobs() const { return wants_logprobs_; }
  bool wants_prompt_logprobs() const { return wants_prompt_logprobs_; }
  bool has_stop_strings() const { return has_stop_strings_; }
  // No stop strings, no stop ids, EOS ignored: only its length ends it.
  bool stops_on_length_only() const { return stops_on_length_only_; }
  int max_tokens() const { return max_tokens_; }

  std::span<const std::int32_t> token_ids() const { return token_ids_; }
  std::span<const std::int32_t> prompt_ids() const {
    return token_ids().first(static_cast<std::size_t>(num_prompt_));
  }
  std::span<const std::int32_t> output_ids() const {
    return token_ids().subspan(static_cast<std::size_t>(num_prompt_));
  }
  int num_tokens() const { return static_cast<int>(token_ids_.size()); }
  int num_prompt_tokens() const { return num_prompt_; }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens(); }
  void append_token(std::int32_t token) { token_ids_.push_back(token); }
  // Room for the sequence at its longest, so that its per-step appends never reallocate.
  void reserve(int num_tokens, int num_blocks);
  // Replaces the last token: a placeholder appended before the token it stands for was known.
  void set_last_token(std::int32_t token) { token_ids_.back() = token; }

  bool finished() const { return status == SequenceStatus::finished; }

  // Start loading what a step reads of this sequence, without waiting for it: a step over many
  // sequences whose memory went cold while the device ran then overlaps their cache misses
  // instead of taking them one after another. First its two hot lines; then, once those are in,
  // the ends of its tokens (appended to) and of its blocks.
  void prefetch_state() const {
    __builtin_prefetch(this);
    __builtin_prefetch(reinterpret_cast<const char*>(this) + 64);
  }
  void prefetch_ends() const {
    if (!token_ids_.empty()) __builtin_prefetch(token_ids_.data() + token_ids_.size() - 1, 1);
    if (!block_ids.empty()) __builtin_prefetch(block_ids.data() + block_ids.size() - 1);
  }

  // A decode step passes over its sequences several times (its tokens, the next plan, the next
  // batch, the worker's rows). The class is aligned to a cache line and what those passes read
  // comes first, private members included: most passes read only the first line (token_ids_
  // through id_, 64 bytes), the token's stop check the second one too. The rest is read
  // rarely.

 private:
  std::vector<std::int32_t> token_ids_;  // prompt then output

 public:
  // KV cache blocks, in token order; owned through the BlockManager.
  std::vector<std::int32_t> block_ids;
  // Tokens whose KV is in the cache (or being computed in the step just scheduled).
  int num_computed_tokens = 0;
  SequenceStatus status = SequenceStatus::waiting;

 private:
  bool wants_prompt_logprobs_;
  SeqId id_;
  // The second cache line.
  int num_prompt_;
  int max_tokens_;
  bool wants_logprobs_;
  bool has_stop_strings_;
  bool stops_on_length_only_;

 public:
  FinishReason finish_reason = FinishReason::none;
  // Leading blocks already offered to the prefix cache.
  int num_registered_blocks = 0;
  // Tokens taken from the prefix cache at the last admission.
  int num_cached_tokens = 0;
  int num_preemptions = 0;
  // Chained hashes of the full blocks of token_ids, computed as needed by the BlockManager.
  std::vector<std::uint64_t> block_hashes;

 private:
  std::shared_ptr<const SamplingParams> params_;
  std::string request_id_;
  int index_;

 public:
  std::optional<std::string> stop_str;            // the stop string that finished it
  std::optional<std::int32_t> stop_token_id;      // the stop token id that finished it

  std::string text;  // detokenized output, stop string cut off
  std::vector<PositionLogprobs> logprobs;                        // per generated token
  std::vector<std::optional<PositionLogprobs>> prompt_logprobs;  // first prompt token: none

  // This sequence's own random stream (sampling does not depend on the batch), made at first
  // use: only the engine core samples from it (the actors' worker keeps its own).
  std::mt19937_64& rng();

 private:
  // Out of line and made late: 2.5 KB inline, or allocated beside each sequence, spread the
  // sequences a page apart, and a step over 256 of them paid an address translation per sequence.
  std::uint64_t rng_seed_;
  std::unique_ptr<std::mt19937_64> rng_;
};

}  // namespace minivllm
