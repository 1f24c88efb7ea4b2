#include "cuda_faults.hpp"

#include <minivllm/error.hpp>

namespace minivllm {

void launch_with_invalid_configuration() {
  throw Error("fault_cuda_error_token_id: this build has no CUDA backend");
}

void write_through_null_pointer() {
  throw Error("fault_cuda_illegal_address_token_id: this build has no CUDA backend");
}

}  // namespace minivllm
