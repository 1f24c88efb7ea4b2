#include "backend/make_ops.hpp"

#include <fstream>
#include <string>

#include <minivllm/error.hpp>

#include "backend/cpu_collectives.hpp"
#include "backend/cpu_ops.hpp"

namespace minivllm {

TensorParallelGroup make_tensor_parallel_group(const Config& config) {
  TensorParallelGroup group;
  group.ranks = static_cast<int>(config.parallel.tensor_parallel_size);
  if (config.runtime.backend == Backend::cuda) {
    // Every device first: a rank that failed on its own would leave the others waiting in
    // NCCL's rendezvous.
    for (std::int64_t device : config.parallel.devices) check_cuda_device(static_cast<int>(device));
    group.nccl_id = make_nccl_id();
  } else
    group.cpu = std::make_shared<CpuCollectives>(group.ranks);
  return group;
}

std::unique_ptr<Ops> make_ops(const Config& config, int device, const TensorParallelGroup* group,
                              int rank) {
  if (config.runtime.backend == Backend::cuda)
    return make_cuda_ops(config.model.dtype, device, config.runtime.cuda_graphs,
                         static_cast<std::int32_t>(config.runtime.cuda_graph_max_prefill_tokens),
                         group, rank);
  if (device != 0)
    throw Error("device " + std::to_string(device) + ": the cpu backend has only device 0");
  if (group != nullptr) return std::make_unique<CpuOps>(group->cpu, rank);
  return std::make_unique<CpuOps>();
}

DType kv_cache_dtype(const Config& config) {
  if (config.cache.kv_cache_dtype == KvCacheDtype::fp8_e4m3) return DType::fp8_e4m3;
  return config.runtime.backend == Backend::cuda ? config.model.dtype : DType::f32;
}

void check_kv_cache_dtype(const Config& config, const KvCacheSpec& spec) {
  if (config.runtime.backend == Backend::cuda && kv_cache_dtype(config) == DType::fp8_e4m3 &&
      spec.head_dim != 64 && spec.head_dim != 128)
    throw Error("cache.kv_cache_dtype = \"fp8_e4m3\": on the cuda backend its prefill kernel "
                "takes head_dim 64 or 128, and " + config.model.path.string() + " has " +
                std::to_string(spec.head_dim) + " (use \"auto\")");
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
