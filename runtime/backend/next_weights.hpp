#pragma once
// Which projection weight a forward reads after a given one. A model's forward reads its weights
// in the same order every step, so the order the last forward took names the next weight while
// the current projection runs, early enough to ask the L2 for it (kernels/cuda/l2_prefetch.cuh).
// Learned, not declared: model plugins need not know. Plain C++ (tested on the CPU).
#include <cstddef>
#include <memory>
#include <unordered_map>

#include <minivllm/tensor.hpp>

namespace minivllm {

class NextWeights {
 public:
  struct Region {
    const void* data = nullptr;
    std::size_t bytes = 0;  // 0: none known
  };

  // Records that `weight` is read now, after the weight read before it, and returns the weight
  // read after `weight` the last time (none if unknown, over max_bytes, or not owned by a live
  // tensor).
  Region read(const Tensor& weight, std::size_t max_bytes);

 private:
  struct Next {
    std::weak_ptr<void> owner;  // an expired owner's memory must not be asked for
    const void* data = nullptr;
    std::size_t bytes = 0;
  };
  const void* previous_ = nullptr;
  std::unordered_map<const void*, Next> next_;
};

}  // namespace minivllm
