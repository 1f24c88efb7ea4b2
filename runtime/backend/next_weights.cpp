#include "backend/next_weights.hpp"

namespace minivllm {

NextWeights::Region NextWeights::read(const Tensor& weight, std::size_t max_bytes) {
  if (previous_ != nullptr && previous_ != weight.data())
    next_[previous_] = {weight.owner(), weight.data(), weight.nbytes()};
  previous_ = weight.data();
  const auto it = next_.find(weight.data());
  // Only memory a tensor still owns is asked for: a borrowed or freed weight's may be gone.
  if (it == next_.end() || it->second.bytes > max_bytes || it->second.owner.expired()) return {};
  return {it->second.data, it->second.bytes};
}

}  // namespace minivllm
