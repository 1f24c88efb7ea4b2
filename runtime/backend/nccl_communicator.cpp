#include "backend/nccl_communicator.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <nccl.h>

#include <minivllm/error.hpp>

namespace minivllm {

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<NcclUniqueId>,
              "NcclUniqueId must hold an ncclUniqueId");

struct NcclCommunicator::Comm {
  ncclComm_t comm = nullptr;
};

namespace {

void check(ncclResult_t status, const char* call, ncclComm_t comm = nullptr) {
  if (status == ncclSuccess) return;
  std::string what = std::string("NCCL error ") + ncclGetErrorString(status) + " in " + call;
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0')
    what += std::string(": ") + last;
  throw Error(what);
}

ncclDataType_t nccl_type(DType dtype) {
  if (dtype == DType::bf16) return ncclBfloat16;
  if (dtype == DType::f32) return ncclFloat32;
  throw Error("NCCL collectives take BF16 or F32 tensors, got " + std::string(dtype_name(dtype)));
}

// NVLink multicast (NVLS) stays off unless the user asked for it (the device machines' notes:
// it is not usable there).
void default_nvls_off() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

}  // namespace

NcclUniqueId NcclCommunicator::unique_id() {
  default_nvls_off();
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclUniqueId bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

NcclCommunicator::NcclCommunicator(const NcclRank& rank)
    : comm_(std::make_unique<Comm>()), ranks_(rank.ranks) {
  if (rank.ranks < 1 || rank.rank < 0 || rank.rank >= rank.ranks)
    throw Error("NCCL rank " + std::to_string(rank.rank) + " outside a group of " +
                std::to_string(rank.ranks));
  default_nvls_off();
  ncclUniqueId id;
  std::memcpy(&id, rank.id.data(), sizeof id);
  check(ncclCommInitRank(&comm_->comm, rank.ranks, id, rank.rank), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_->comm != nullptr) ncclCommDestroy(comm_->comm);  // no throwing from a destructor
}

void NcclCommunicator::all_reduce(void* x, std::size_t count, DType dtype, cudaStream_t stream) {
  check(ncclAllReduce(x, x, count, nccl_type(dtype), ncclSum, comm_->comm, stream),
        "ncclAllReduce", comm_->comm);
}

void NcclCommunicator::all_gather(const void* x, void* out, std::size_t count, DType dtype,
                                  cudaStream_t stream) {
  check(ncclAllGather(x, out, count, nccl_type(dtype), comm_->comm, stream), "ncclAllGather",
        comm_->comm);
}

}  // namespace minivllm
