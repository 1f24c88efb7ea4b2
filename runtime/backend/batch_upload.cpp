#include "backend/batch_upload.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cuda_check.hpp"

namespace minivllm::cuda {

namespace {

constexpr std::size_t kAlign = 16;

// Reserves room for `v` at the end of a layout of `bytes` so far; returns its offset.
template <class T>
std::size_t place(const std::vector<T>& v, std::size_t& bytes) {
  const std::size_t offset = bytes;
  bytes += (v.size() * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  return offset;
}

template <class T>
void pack(const std::vector<T>& v, std::size_t offset, void* base) {
  if (!v.empty()) std::memcpy(static_cast<char*>(base) + offset, v.data(), v.size() * sizeof(T));
}

template <class T>
const T* at_offset(const void* base, std::size_t offset) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

}  // namespace

BatchLayout BatchLayout::of(const Batch& b) {
  BatchLayout l;
  std::size_t bytes = 0;
  l.token_ids = place(b.token_ids, bytes);
  l.positions = place(b.positions, bytes);
  l.slot_mapping = place(b.slot_mapping, bytes);
  l.query_start = place(b.query_start, bytes);
  l.context_lens = place(b.context_lens, bytes);
  l.decode_order = place(b.context_lens, bytes);  // one entry per sequence too
  l.context_total = bytes;
  bytes += kAlign;
  l.block_tables = place(b.block_tables, bytes);
  l.logits_rows = place(b.logits_rows, bytes);
  l.bytes = bytes;
  return l;
}

DeviceBatch DeviceBatch::at(const void* base, const BatchLayout& l) {
  return {at_offset<std::int32_t>(base, l.token_ids),
          at_offset<std::int32_t>(base, l.positions),
          at_offset<std::int64_t>(base, l.slot_mapping),
          at_offset<std::int32_t>(base, l.query_start),
          at_offset<std::int32_t>(base, l.context_lens),
          at_offset<std::int32_t>(base, l.decode_order),
          at_offset<std::int64_t>(base, l.context_total),
          at_offset<std::int32_t>(base, l.block_tables),
          at_offset<std::int32_t>(base, l.logits_rows)};
}

BatchUploader::~BatchUploader() {
  // No throwing from a destructor; cudaFreeHost waits for the copies still reading.
  for (Staging& s : staging_) {
    if (s.host != nullptr) cudaFreeHost(s.host);
    if (s.copied != nullptr) cudaEventDestroy(s.copied);
  }
}

void BatchUploader::upload(const Batch& batch, const BatchLayout& layout, void* device) {
  if (layout.bytes == 0) return;
  Staging& s = staging_[next_];
  next_ = 1 - next_;
  if (s.copied == nullptr)
    MV_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
  else
    MV_CUDA_CHECK(cudaEventSynchronize(s.copied));  // the copy two uploads ago: long done
  if (s.capacity < layout.bytes) {
    // Grows geometrically: pinned allocations are slow and act as a barrier, so they stay rare.
    const std::size_t capacity = std::max(layout.bytes, 2 * s.capacity);
    if (s.host != nullptr) MV_CUDA_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    s.capacity = 0;
    MV_CUDA_CHECK(cudaHostAlloc(&s.host, capacity, cudaHostAllocDefault));
    s.capacity = capacity;
  }
  pack(batch.token_ids, layout.token_ids, s.host);
  pack(batch.positions, layout.positions, s.host);
  pack(batch.slot_mapping, layout.slot_mapping, s.host);
  pack(batch.query_start, layout.query_start, s.host);
  pack(batch.context_lens, layout.context_lens, s.host);
  const std::int64_t total = decode_order_.longest_first(
      batch.context_lens,
      reinterpret_cast<std::int32_t*>(static_cast<char*>(s.host) + layout.decode_order));
  std::memcpy(static_cast<char*>(s.host) + layout.context_total, &total, sizeof total);
  pack(batch.block_tables, layout.block_tables, s.host);
  pack(batch.logits_rows, layout.logits_rows, s.host);
  MV_CUDA_CHECK(cudaMemcpyAsync(device, s.host, layout.bytes, cudaMemcpyHostToDevice, stream_));
  MV_CUDA_CHECK(cudaEventRecord(s.copied, stream_));
}

}  // namespace minivllm::cuda
