// make_ops's CUDA half in a build with CUDA.
#include <cuda_runtime_api.h>

#include <string>

#include <minivllm/error.hpp>

#include "backend/cuda_check.hpp"
#include "backend/cuda_ops.hpp"
#include "backend/make_ops.hpp"
#include "backend/nccl_communicator.hpp"

namespace minivllm {

void check_cuda_device(int device) {
  // Without a GPU the runtime answers cudaErrorNoDevice or cudaErrorInsufficientDriver (no
  // driver at all): say what the user needs to know rather than the driver's words.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw Error(std::string("runtime.backend = \"cuda\": no CUDA device found (") +
                (status == cudaSuccess ? "cudaGetDeviceCount found 0 devices"
                                       : std::string(cudaGetErrorName(status)) + ": " +
                                             cudaGetErrorString(status)) +
                "); use runtime.backend = \"cpu\" on a machine without a GPU");
  if (device < 0 || device >= count)
    throw Error("parallel.devices: CUDA device " + std::to_string(device) + " is not there (" +
                std::to_string(count) + " visible: 0 to " + std::to_string(count - 1) + ")");
}

std::unique_ptr<Ops> make_cuda_ops(DType compute_dtype, int device, bool cuda_graphs,
                                   std::int32_t max_prefill_graph_tokens,
                                   const TensorParallelGroup* group, int rank) {
  check_cuda_device(device);
  if (group == nullptr)
    return std::make_unique<CudaOps>(compute_dtype, device, cuda_graphs, nullptr,
                                     max_prefill_graph_tokens);
  const NcclRank nccl{group->nccl_id, rank, group->ranks};
  return std::make_unique<CudaOps>(compute_dtype, device, cuda_graphs, &nccl,
                                   max_prefill_graph_tokens);
}

NcclUniqueId make_nccl_id() { return NcclCommunicator::unique_id(); }

std::int64_t free_cuda_memory() {
  std::size_t free = 0, total = 0;
  MV_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<std::int64_t>(free);
}

std::string cuda_device_name() {
  cudaDeviceProp props{};
  MV_CUDA_CHECK(cudaGetDeviceProperties(&props, 0));
  return props.name;
}

}  // namespace minivllm
