#pragma once
// One rank's NCCL communicator, for CudaOps' collectives. Calls are queued on the caller's
// stream (so CUDA graphs capture them); every NCCL return code is checked and a failure throws
// minivllm::Error naming the call and NCCL's own words. A build without NCCL has the same
// interface failing with how to get it (nccl_communicator_none.cpp).
#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

#include "backend/tensor_parallel_group.hpp"

namespace minivllm {

// Rank `rank` of `ranks`, meeting the others through `id`.
struct NcclRank {
  NcclUniqueId id{};
  int rank = 0;
  int ranks = 1;
};

class NcclCommunicator {
 public:
  // A new id for one group (ncclGetUniqueId): the group's maker hands it to every rank.
  static NcclUniqueId unique_id();

  // Joins the group on the current CUDA device (ncclCommInitRank): blocks until every rank has
  // joined, so the ranks must join from threads (or processes) of their own.
  explicit NcclCommunicator(const NcclRank& rank);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int ranks() const { return ranks_; }
  // `count` elements of `dtype` (bf16 or f32) at x summed over the ranks, in place.
  void all_reduce(void* x, std::size_t count, DType dtype, cudaStream_t stream);
  // `count` elements from every rank into out [ranks][count], rank order.
  void all_gather(const void* x, void* out, std::size_t count, DType dtype, cudaStream_t stream);

 private:
  struct Comm;
  std::unique_ptr<Comm> comm_;
  int ranks_ = 1;
};

}  // namespace minivllm
