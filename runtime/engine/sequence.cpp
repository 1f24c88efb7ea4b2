#include "engine/sequence.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace minivllm {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::none: break;
  }
  return "";
}

Sequence::Sequence(SeqId id, std::string request_id, int index, std::vector<std::int32_t> prompt,
                   std::shared_ptr<const SamplingParams> params, std::uint64_t rng_seed)
    : tokens_(std::make_unique_for_overwrite<std::int32_t[]>(prompt.size())),
      num_tokens_(static_cast<int>(prompt.size())),
      num_stored_(num_tokens_),
      wants_prompt_logprobs_(params->prompt_logprobs.has_value()),
      has_stop_strings_(!params->stop.empty()),
      stops_on_length_only_(!has_stop_strings_ && params->stop_token_ids.empty() &&
                            params->ignore_eos),
      id_(id),
      max_num_tokens_(static_cast<int>(std::min<std::int64_t>(
          std::int64_t{num_tokens_} + params->max_tokens, std::numeric_limits<int>::max()))),
      capacity_(num_tokens_),
      num_prompt_(num_tokens_),
      wants_logprobs_(params->logprobs.has_value()),
      params_(std::move(params)),
      request_id_(std::move(request_id)),
      index_(index),
      rng_seed_(rng_seed) {
  std::copy(prompt.begin(), prompt.end(), tokens_.get());
}

std::mt19937_64& Sequence::rng() {
  if (!rng_) rng_ = std::make_unique<std::mt19937_64>(rng_seed_);
  return *rng_;
}

void Sequence::store_newest() const {
  if (num_tokens_ > capacity_) grow(std::max(num_tokens_, 2 * capacity_));
  std::copy(newest_, newest_ + (num_tokens_ - num_stored_), tokens_.get() + num_stored_);
  num_stored_ = num_tokens_;
}

void Sequence::grow(int capacity) const {
  auto grown = std::make_unique_for_overwrite<std::int32_t[]>(static_cast<std::size_t>(capacity));
  std::copy(tokens_.get(), tokens_.get() + num_stored_, grown.get());
  tokens_ = std::move(grown);
  capacity_ = capacity;
}

void Sequence::reserve(int num_tokens, int num_blocks) {
  if (num_tokens > capacity_) grow(num_tokens);
  block_ids.reserve(static_cast<std::size_t>(num_blocks));
  block_hashes.reserve(static_cast<std::size_t>(num_blocks));
}

}  // namespace minivllm
