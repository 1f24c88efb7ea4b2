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

#include "engine/block_ids.hpp"
#include <minivllm/logprobs.hpp>
#include <minivllm/request_output.hpp>
#include <minivllm/sampling_params.hpp>

namespace minivllm {

using SeqId = std::uint64_t;

enum class SequenceStatus : std::uint8_t { waiting, running, finished };

class alignas(128) Sequence {
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
  // Its prompt and max_tokens outputs: its length at most, but for max_model_len.
  int max_num_tokens() const { return max_num_tokens_; }

  // All its tokens, prompt then output. Stores the newest ones first (below): not for a step's
  // hot path, and not from two threads at once.
  std::span<const std::int32_t> token_ids() const {
    if (num_stored_ < num_tokens_) store_newest();
    return {tokens_.get(), static_cast<std::size_t>(num_tokens_)};
  }
  std::span<const std::int32_t> prompt_ids() const {  // always stored
    return {tokens_.get(), static_cast<std::size_t>(num_prompt_)};
  }
  std::span<const std::int32_t> output_ids() const {
    return token_ids().subspan(static_cast<std::size_t>(num_prompt_));
  }
  // Token `pos` (< num_tokens()) and the last one, read where they are.
  std::int32_t token(int pos) const {
    return pos < num_stored_ ? tokens_[static_cast<std::size_t>(pos)] : newest_[pos - num_stored_];
  }
  std::int32_t last_token() const { return token(num_tokens_ - 1); }
  int num_tokens() const { return num_tokens_; }
  int num_prompt_tokens() const { return num_prompt_; }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens(); }
  void append_token(std::int32_t token) {
    if (num_tokens_ - num_stored_ == kNewest) store_newest();
    newest_[num_tokens_++ - num_stored_] = token;
  }
  // Room for the sequence at its longest, so that its per-step appends never reallocate.
  void reserve(int num_tokens, int num_blocks);
  // Replaces the last token: a placeholder appended before the token it stands for was known.
  void set_last_token(std::int32_t token) {
    if (num_stored_ < num_tokens_) newest_[num_tokens_ - 1 - num_stored_] = token;
    else tokens_[static_cast<std::size_t>(num_tokens_ - 1)] = token;
  }

  bool finished() const { return status == SequenceStatus::finished; }

  // Start loading what a step reads of this sequence, without waiting for it: a step over many
  // sequences whose memory went cold while the device ran then overlaps their cache misses
  // instead of taking them one after another. prefetch_state asks for the first line (each pass
  // reads it), prefetch_block_ids for the second (prepare_batch reads it, later): asked for all
  // at once, twice as many lines wait on the core's few outstanding misses.
  void prefetch_state() const { __builtin_prefetch(this, 1); }
  void prefetch_block_ids() const { __builtin_prefetch(reinterpret_cast<const char*>(this) + 64); }
  // Whether the next append_token stores the newest tokens: it reads the array's capacity (in
  // the third line) and writes at the array's end. prefetch_store starts loading both.
  bool stores_on_next_append() const { return num_tokens_ - num_stored_ == kNewest; }
  void prefetch_store() const {
    __builtin_prefetch(&capacity_);
    __builtin_prefetch(tokens_.get() + num_stored_, 1);
  }

  // A decode step passes over its sequences several times (its tokens, the next plan, the next
  // batch, the worker's rows), on a core whose caches other threads may have emptied since the
  // step before: each distinct cache line per sequence is a miss per step. So the class is
  // aligned to a pair of lines and all that a decode step reads or writes of it is in the first
  // line (private members included: tokens_ through block_ids' counts, 64 bytes) and, for
  // prepare_batch, the block ids in place in the second. Its newest tokens are in the first line
  // too: they go to the token array (a line elsewhere) every kNewest steps, not every step.

 private:
  static constexpr int kNewest = 4;
  // Stores the newest tokens after the others in tokens_.
  void store_newest() const;
  // Moves the stored tokens to an array of `capacity` (> capacity_).
  void grow(int capacity) const;

  mutable std::unique_ptr<std::int32_t[]> tokens_;  // capacity_ of them, num_stored_ set
  int num_tokens_;
  mutable int num_stored_;                // the leading tokens in tokens_, the prompt at least
  mutable std::int32_t newest_[kNewest];  // tokens num_stored_ .. num_tokens_ - 1

 public:
  // Tokens whose KV is in the cache (or being computed in the step just scheduled).
  int num_computed_tokens = 0;
  SequenceStatus status = SequenceStatus::waiting;

 private:
  bool wants_prompt_logprobs_;
  bool has_stop_strings_;
  bool stops_on_length_only_;
  SeqId id_;
  int max_num_tokens_;

 public:
  // Leading blocks already offered to the prefix cache.
  int num_registered_blocks = 0;
  // KV cache blocks, in token order; owned through the BlockManager. Its counts end the first
  // line, its ids in place fill the second.
  BlockIds block_ids;

 private:
  mutable int capacity_;
  int num_prompt_;
  bool wants_logprobs_;

 public:
  FinishReason finish_reason = FinishReason::none;
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
