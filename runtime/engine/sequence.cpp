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
    : id_(id),
      token_ids_(std::move(prompt)),
      num_prompt_(token_ids_.size()),
      params_(std::move(params)),
      request_id_(std::move(request_id)),
      index_(index),
      rng(rng_seed) {}

void Sequence::reserve(int num_tokens, int num_blocks) {
  token_ids_.reserve(static_cast<std::size_t>(num_tokens));
  block_ids.reserve(static_cast<std::size_t>(num_blocks));
  block_hashes.reserve(static_cast<std::size_t>(num_blocks));
}

}  // namespace minivllm
