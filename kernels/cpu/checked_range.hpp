#pragma once
// The innermost CPU loops (dot, to_f32) hold most of every tiny-model test's time. AddressSanitizer
// checking each of their elements made the sanitizer tree's suite ~10x slower than the main
// tree's. Under ASan those loops instead run uninstrumented after check_range has checked each
// whole range they read or write once: an out-of-bounds range is reported, with its stack, before
// the loop runs. Outside ASan both are nothing.
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MV_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define MV_NO_SANITIZE
#endif

namespace minivllm::cpu {

// Under ASan: an instrumented read of the first poisoned byte of [p, p + bytes), if any, which
// ASan reports as the loop's own access would have been.
inline void check_range(const void* p, std::size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  if (const void* bad = __asan_region_is_poisoned(const_cast<void*>(p), bytes))
    static_cast<void>(*static_cast<const volatile char*>(bad));
#else
  static_cast<void>(p);
  static_cast<void>(bytes);
#endif
}

}  // namespace minivllm::cpu
