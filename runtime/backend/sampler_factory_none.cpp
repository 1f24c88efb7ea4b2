// make_device_sampler in a build without CUDA: every backend samples on the host.
#include "backend/make_sampler.hpp"

namespace minivllm {

std::unique_ptr<DeviceSampler> make_device_sampler(Ops&) { return nullptr; }

}  // namespace minivllm
