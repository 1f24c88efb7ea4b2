// NcclCommunicator in a CUDA build without NCCL: tensor parallelism on the cuda backend fails
// with how to get it.
#include "backend/nccl_communicator.hpp"

#include <minivllm/error.hpp>

namespace minivllm {
namespace {

[[noreturn]] void no_nccl() {
  throw Error("parallel.tensor_parallel_size > 1 on the cuda backend: this build has no NCCL "
              "(install nccl.h and libnccl with the CUDA toolkit, then reconfigure)");
}

}  // namespace

struct NcclCommunicator::Comm {};

NcclUniqueId NcclCommunicator::unique_id() { no_nccl(); }
NcclCommunicator::NcclCommunicator(const NcclRank&) { no_nccl(); }
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::all_reduce(void*, std::size_t, DType, cudaStream_t) { no_nccl(); }
void NcclCommunicator::all_gather(const void*, void*, std::size_t, DType, cudaStream_t) { no_nccl(); }

}  // namespace minivllm
