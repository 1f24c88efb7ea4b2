#include "engine/sequence.hpp"

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
    : token_ids_(std::move(prompt)),
      wants_prompt_logprobs_(params->prompt_logprobs.has_value()),
      id_(id),
      num_prompt_(static_cast<int>(token_ids_.size())),
      max_tokens_(params->max_tokens),
      wants_logprobs_(params->logprobs.has_value()),
      has_stop_strings_(!params->stop.empty()),
      stops_on_length_only_(!has_stop_strings_ && params->stop_token_ids.empty() &&
                            params->ignore_eos),
      params_(std::move(params)),
      request_id_(std::move(request_id)),
      index_(index),
      rng_seed_(rng_seed) {}

std::mt19937_64& Sequence::rng() {
  if (!rng_) rng_ = std::make_unique<std::mt19937_64>(rng_seed_);
  return *rng_;
}

void Sequence::reserve(int num_tokens, int num_blocks) {
  token_ids_.reserve(static_cast<std::size_t>(num_tokens));
  block_ids.reserve(static_cast<std::size_t>(num_blocks));
  block_hashes.reserve(static_cast<std::size_t>(num_blocks));
}

}  // namespace minivllm
