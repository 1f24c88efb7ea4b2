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
    : rng(rng_seed),
      id_(id),
      request_id_(std::move(request_id)),
      index_(index),
      token_ids_(std::move(prompt)),
      num_prompt_(token_ids_.size()),
      params_(std::move(params)) {}

}  // namespace minivllm
