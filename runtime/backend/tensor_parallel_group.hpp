#pragma once
// What the ranks of one tensor-parallel group share (backend-neutral: no NCCL header).
#include <array>
#include <memory>

namespace minivllm {

class HostCollectives;

// ncclUniqueId's bytes (NCCL_UNIQUE_ID_BYTES), without NCCL's header.
using NcclUniqueId = std::array<char, 128>;

// What the ranks of one tensor-parallel group share to find each other: made once, before any
// rank's backend, by whoever starts them (make_tensor_parallel_group), and handed to each
// rank's make_ops. Each rank's ops then carry the group's collectives.
struct TensorParallelGroup {
  int ranks = 1;
  std::shared_ptr<HostCollectives> cpu;  // the cpu backend's
  NcclUniqueId nccl_id{};               // the cuda backend's: each rank joins NCCL with it
};

}  // namespace minivllm
