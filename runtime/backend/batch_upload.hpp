#pragma once
// A step's Batch on the device in one copy: its arrays packed back to back into pinned host
// memory and copied with one cudaMemcpyAsync, instead of a pageable copy per array per op.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <minivllm/batch.hpp>

#include "backend/decode_order.hpp"

namespace minivllm::cuda {

// Where each of a Batch's arrays sits in the packed buffer (byte offsets, 16-byte aligned), and
// the sequences' decode order (DecodeOrder) and total context, made while packing.
struct BatchLayout {
  std::size_t token_ids = 0, positions = 0, slot_mapping = 0, query_start = 0, context_lens = 0,
              decode_order = 0, context_total = 0, block_tables = 0, logits_rows = 0;
  std::size_t bytes = 0;  // the whole buffer

  static BatchLayout of(const Batch& batch);
};

// The device pointers of a packed copy.
struct DeviceBatch {
  const std::int32_t* token_ids = nullptr;
  const std::int32_t* positions = nullptr;
  const std::int64_t* slot_mapping = nullptr;
  const std::int32_t* query_start = nullptr;
  const std::int32_t* context_lens = nullptr;
  const std::int32_t* decode_order = nullptr;  // the sequences, longest context first
  const std::int64_t* context_total = nullptr;  // the sum of context_lens
  const std::int32_t* block_tables = nullptr;
  const std::int32_t* logits_rows = nullptr;

  static DeviceBatch at(const void* base, const BatchLayout& layout);
};

// Packs batches into pinned host memory and queues their copies on one stream. Two pinned
// buffers take turns, each guarded by an event, so packing a step never overwrites memory the
// previous step's copy may still be reading.
class BatchUploader {
 public:
  explicit BatchUploader(cudaStream_t stream) : stream_(stream) {}
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // Queues the copy of `batch` (laid out as `layout`, from BatchLayout::of(batch)) to `device`
  // (layout.bytes of device memory). `batch` may change as soon as this returns.
  void upload(const Batch& batch, const BatchLayout& layout, void* device);

 private:
  struct Staging {
    void* host = nullptr;  // pinned
    std::size_t capacity = 0;
    cudaEvent_t copied = nullptr;  // recorded after the last copy out of `host`
  };

  cudaStream_t stream_;
  Staging staging_[2];
  int next_ = 0;
  DecodeOrder decode_order_;
};

}  // namespace minivllm::cuda
