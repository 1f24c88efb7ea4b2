#pragma once
// The fault hook's CUDA faults (cuda_faults.cu; cuda_faults_none.cpp in a build without CUDA,
// where each throws minivllm::Error saying so).
namespace minivllm {

// Launches a kernel with more threads a block than any device has and checks the launch as the
// backend checks its own: throws minivllm::Error (cudaErrorInvalidValue on CUDA 13); the
// context stays usable.
void launch_with_invalid_configuration();

// Runs a kernel that writes through a null pointer and waits for it, unchecked: the context is
// lost, and the next checked CUDA call (the model's own ops) throws minivllm::DeviceLost.
void write_through_null_pointer();

}  // namespace minivllm
