#include "backend/make_ops.hpp"

#include <fstream>
#include <string>

#include <minivllm/error.hpp>

#include "backend/cpu_ops.hpp"

namespace minivllm {

std::unique_ptr<Ops> make_ops(const Config& config, int device) {
  if (config.runtime.backend == Backend::cuda)
    return make_cuda_ops(config.model.dtype, device, config.runtime.cuda_graphs);
  if (device != 0)
    throw Error("device " + std::to_string(device) + ": the cpu backend has only device 0");
  return std::make_unique<CpuOps>();
}

DType kv_cache_dtype(const Config& config) {
  return config.runtime.backend == Backend::cuda ? config.model.dtype : DType::f32;
}

std::int64_t free_backend_memory(const Config& config) {
  if (config.runtime.backend == Backend::cuda) return free_cuda_memory();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(64, '\n');  // the unit
  }
  throw Error("/proc/meminfo: no MemAvailable line (cannot tell how much memory the KV cache may take)");
}

}  // namespace minivllm
