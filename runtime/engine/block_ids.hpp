#pragma once
// A sequence's KV cache block ids, in token order: up to kInline of them in place, more on the
// heap. A decode step over a few hundred sequences reads each one's blocks (prepare_batch): in
// place they sit in the sequence's own cache lines, where a separate heap array costs one more
// cache miss per sequence and step. kInline blocks cover max_model_len 4096 at block size 256.
#include <algorithm>
#include <cstdint>
#include <memory>

namespace minivllm {

class BlockIds {
 public:
  static constexpr std::int32_t kInline = 16;

  BlockIds() = default;
  // Stays where its sequence is (a sequence is never copied or moved).
  BlockIds(const BlockIds&) = delete;
  BlockIds& operator=(const BlockIds&) = delete;

  std::size_t size() const { return static_cast<std::size_t>(size_); }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return static_cast<std::size_t>(capacity_); }
  // Whether they live in place (only the heap pointer's line is read otherwise).
  bool is_inline() const { return capacity_ == kInline; }

  const std::int32_t* data() const { return is_inline() ? inline_ : heap_.get(); }
  const std::int32_t* begin() const { return data(); }
  const std::int32_t* end() const { return data() + size_; }
  std::int32_t operator[](std::size_t i) const { return data()[i]; }

  void push_back(std::int32_t block) {
    if (size_ == capacity_) reserve(static_cast<std::size_t>(capacity_) * 2);
    (is_inline() ? inline_ : heap_.get())[size_++] = block;
  }
  // Empties it, keeping its capacity (a preempted sequence takes blocks again later).
  void clear() { size_ = 0; }
  // Room for n ids without reallocating.
  void reserve(std::size_t n) {
    if (n <= capacity()) return;
    auto grown = std::make_unique<std::int32_t[]>(n);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = static_cast<std::int32_t>(n);
  }

 private:
  // The counts first: a Sequence puts them in its first cache line and the ids in the second.
  std::int32_t size_ = 0;
  std::int32_t capacity_ = kInline;
  std::int32_t inline_[kInline];
  std::unique_ptr<std::int32_t[]> heap_;  // the ids when capacity_ > kInline
};

}  // namespace minivllm
