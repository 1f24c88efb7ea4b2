// make_ops's CUDA half in a build without CUDA: a cuda config fails with how to get one.
#include <minivllm/error.hpp>

#include "backend/make_ops.hpp"

namespace minivllm {
namespace {

[[noreturn]] void no_cuda() {
  throw Error("runtime.backend = \"cuda\": this build has no CUDA backend (configure with -Dcuda=enabled)");
}

}  // namespace

std::unique_ptr<Ops> make_cuda_ops(DType, int, bool, std::int32_t, const TensorParallelGroup*, int) {
  no_cuda();
}
NcclUniqueId make_nccl_id() { no_cuda(); }
void check_cuda_device(int) { no_cuda(); }
std::int64_t free_cuda_memory() { no_cuda(); }
std::string cuda_device_name() { no_cuda(); }

}  // namespace minivllm
