#include "backend/decode_order.hpp"

#include <algorithm>

namespace minivllm::cuda {

namespace {
constexpr int kBucketShift = 6;  // 64 tokens
}

std::int64_t DecodeOrder::longest_first(std::span<const std::int32_t> context_lens,
                                        std::int32_t* order) {
  std::int32_t longest = 0;
  std::int64_t total = 0;
  for (const std::int32_t len : context_lens) {
    longest = std::max(longest, len);
    total += len;
  }
  // Bucket b holds lengths in [64 b, 64 b + 63]; buckets are laid out longest first.
  const std::size_t buckets = static_cast<std::size_t>(longest >> kBucketShift) + 1;
  bucket_starts_.assign(buckets + 1, 0);
  const auto slot_of = [&](std::int32_t len) {
    return buckets - 1 - static_cast<std::size_t>(std::max(len, 0) >> kBucketShift);
  };
  for (const std::int32_t len : context_lens) ++bucket_starts_[slot_of(len) + 1];
  for (std::size_t b = 1; b <= buckets; ++b) bucket_starts_[b] += bucket_starts_[b - 1];
  for (std::size_t i = 0; i < context_lens.size(); ++i)
    order[bucket_starts_[slot_of(context_lens[i])]++] = static_cast<std::int32_t>(i);
  return total;
}

}  // namespace minivllm::cuda
