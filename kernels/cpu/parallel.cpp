#include "kernels/cpu/parallel.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace minivllm::cpu {

namespace {
constexpr std::int64_t kMinWorkPerThread = 1 << 20;  // ~1 ms of multiply-adds

std::int64_t thread_count() {
  static const std::int64_t n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}
}  // namespace

void parallel_for(std::int64_t n, std::int64_t work_per_item,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (n <= 0) return;
  const std::int64_t by_work = std::max<std::int64_t>(1, n * work_per_item / kMinWorkPerThread);
  const std::int64_t threads = std::min({thread_count(), by_work, n});
  if (threads == 1) {
    body(0, n);
    return;
  }
  const std::int64_t chunk = (n + threads - 1) / threads;
  std::vector<std::jthread> workers;
  for (std::int64_t t = 1; t < threads; ++t) {
    const std::int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end) workers.emplace_back([&body, begin, end] { body(begin, end); });
  }
  body(0, std::min(n, chunk));
}

}  // namespace minivllm::cpu
