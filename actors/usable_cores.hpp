#pragma once
// How many cores this process may run on, and what waiting for another thread may cost: a thread
// that sleeps costs its waker a wake-up (tens of µs on a virtual machine's idle core), a thread
// that spins costs a core. Spinning pays only where the spinner has a core to itself.
#include <sched.h>

#include <algorithm>
#include <thread>

namespace minivllm {

// The cores of the calling thread's affinity mask (taskset, cpusets), at least 1.
inline unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

// With fewer cores, threads that wait for each other sleep instead of spinning: a spinner would
// take the core the thread it waits for needs (a 2-core box's 256-sequence decode step: 29 µs
// sleeping, 86 µs spinning; the H200's host confined to 4 cores: 51 µs sleeping with 4 pool
// threads, 31 µs spinning with the runner thread and 2 pool threads).
constexpr unsigned kMinCoresToSpin = 4;

inline bool may_spin() { return usable_cores() >= kMinCoresToSpin; }

// Tells the core that this thread spins (it yields pipeline resources to a sibling thread).
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace minivllm
