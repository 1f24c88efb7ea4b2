#pragma once
// The one place a launch Config's runtime.backend becomes an Ops. The CUDA half lives in
// cuda_factory.cpp, or in cuda_factory_none.cpp (a clear error) when built without CUDA.
#include <cstdint>
#include <memory>
#include <string>

#include <minivllm/kv_cache.hpp>
#include <minivllm/ops.hpp>

#include <minivllm/config.hpp>

#include "backend/tensor_parallel_group.hpp"

namespace minivllm {

// A group of parallel.tensor_parallel_size ranks on the config's backend. Throws
// minivllm::Error (a cuda build without NCCL, NCCL's own errors).
TensorParallelGroup make_tensor_parallel_group(const Config& config);

// CpuOps, or CudaOps (compute dtype model.dtype) on CUDA device `device`, created on the calling
// thread, which must be the thread that uses it; with `group`, as rank `rank` of it. Throws
// minivllm::Error (e.g. cuda in a build without CUDA, a device that is not there; the cpu
// backend has only device 0).
std::unique_ptr<Ops> make_ops(const Config& config, int device = 0,
                              const TensorParallelGroup* group = nullptr, int rank = 0);

// The dtype the backend's KV cache must have: fp8_e4m3 for cache.kv_cache_dtype = "fp8_e4m3";
// otherwise f32 on the CPU, the compute dtype on CUDA.
DType kv_cache_dtype(const Config& config);

// Throws minivllm::Error naming cache.kv_cache_dtype when the backend cannot run a model whose
// cache is `spec` with that dtype: on cuda an fp8_e4m3 cache's prefill runs on the flash kernel
// only, which takes head_dim 64 or 128. Checked at load, not at the first prefill.
void check_kv_cache_dtype(const Config& config, const KvCacheSpec& spec);

// Memory the KV cache may take on the config's backend, in bytes: the current CUDA device's free
// memory (call on the ops' thread), or the host's MemAvailable (/proc/meminfo) on the CPU.
std::int64_t free_backend_memory(const Config& config);

// The CUDA half (cuda_factory*.cpp). make_cuda_ops: a CudaOps on CUDA device `device` replaying
// steps as CUDA graphs when cuda_graphs (prefill steps of up to max_prefill_graph_tokens), with
// `group` rank `rank` of its NCCL communicator. make_nccl_id: a new ncclUniqueId.
std::unique_ptr<Ops> make_cuda_ops(DType compute_dtype, int device, bool cuda_graphs,
                                   std::int32_t max_prefill_graph_tokens,
                                   const TensorParallelGroup* group, int rank);
NcclUniqueId make_nccl_id();
// Throws minivllm::Error naming parallel.devices when CUDA device `device` is not there (or no
// GPU at all).
void check_cuda_device(int device);
// Free memory of the current CUDA device in bytes (cudaMemGetInfo); call on the ops' thread.
std::int64_t free_cuda_memory();
// The name of CUDA device 0 ("NVIDIA H200"), for benchmark reports.
std::string cuda_device_name();

}  // namespace minivllm
