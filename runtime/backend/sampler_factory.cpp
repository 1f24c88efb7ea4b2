// make_device_sampler in a build with CUDA.
#include "backend/cuda_ops.hpp"
#include "backend/cuda_sampler.hpp"
#include "backend/make_sampler.hpp"

namespace minivllm {

std::unique_ptr<DeviceSampler> make_device_sampler(Ops& ops) {
  auto* cuda = dynamic_cast<CudaOps*>(&ops);
  if (cuda == nullptr) return nullptr;
  return std::make_unique<CudaSampler>(*cuda);
}

}  // namespace minivllm
