#pragma once
// The sampler for a backend's logits where they are: a CudaSampler for CudaOps, nullptr for
// other backends (their logits come to the host for the CPU sampler) and in a build without
// CUDA. The CUDA half is sampler_factory.cpp, or sampler_factory_none.cpp.
#include <memory>

#include <minivllm/ops.hpp>

#include "backend/device_sampler.hpp"

namespace minivllm {

// `ops` must outlive the sampler; call on the ops' thread.
std::unique_ptr<DeviceSampler> make_device_sampler(Ops& ops);

}  // namespace minivllm
