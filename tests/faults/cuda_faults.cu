#include "cuda_faults.hpp"

#include "backend/cuda_check.hpp"

namespace minivllm {
namespace {

__global__ void do_nothing() {}

__global__ void store_one(int* p) { *p = 1; }

}  // namespace

void launch_with_invalid_configuration() {
  do_nothing<<<1, 4096>>>();  // the limit is 1,024 threads a block
  MV_CUDA_CHECK(cudaGetLastError());
}

void write_through_null_pointer() {
  store_one<<<1, 1>>>(nullptr);
  (void)cudaDeviceSynchronize();
}

}  // namespace minivllm
