#include "backend/make_ops.hpp"

#include "backend/cpu_ops.hpp"

namespace minivllm {

std::unique_ptr<Ops> make_ops(const Config& config) {
  if (config.runtime.backend == Backend::cuda) return make_cuda_ops(config.model.dtype, config.runtime.cuda_graphs);
  return std::make_unique<CpuOps>();
}

DType kv_cache_dtype(const Config& config) {
  return config.runtime.backend == Backend::cuda ? config.model.dtype : DType::f32;
}

}  // namespace minivllm
