#pragma once
// Splits a loop over both cores when the work is big enough to pay for starting a thread;
// small loops (decode steps of tiny models) run inline.
#include <cstdint>
#include <functional>

namespace minivllm::cpu {

// Calls body(begin, end) on disjoint ranges covering [0, n). `work_per_item` is a rough cost
// (multiply-adds) of one item, used to decide whether threads are worth it.
void parallel_for(std::int64_t n, std::int64_t work_per_item,
                  const std::function<void(std::int64_t begin, std::int64_t end)>& body);

}  // namespace minivllm::cpu
