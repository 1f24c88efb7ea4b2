// The CPU backend's pool of large buffers (backend/host_pool.hpp): reuse of a freed buffer,
// idle buffers unmapped after the decay by the pool's thread, buffers in use never touched.
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "backend/host_pool.hpp"
#include "backend/size_class.hpp"

namespace minivllm {
namespace {

using namespace std::chrono_literals;
constexpr std::size_t MiB = std::size_t{1} << 20;

// Polls `done` for up to 5 s (the decay thread runs on its own time).
template <class F>
bool eventually(F done) {
  for (auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

TEST(HostPool, HandsAFreedBufferOfTheSameClassOutAgain) {
  auto pool = HostPool::create(60s);
  void* first = nullptr;
  {
    std::shared_ptr<void> a = pool->allocate(3 * MiB);
    first = a.get();
    std::memset(a.get(), 1, 3 * MiB);  // the pages are writable
    EXPECT_EQ(pool->mapped_bytes(), size_class(3 * MiB));
    EXPECT_EQ(pool->idle_bytes(), 0u);
  }
  EXPECT_EQ(pool->idle_bytes(), size_class(3 * MiB));
  std::shared_ptr<void> b = pool->allocate(3 * MiB - 4096);  // same class
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool->idle_bytes(), 0u);
  std::shared_ptr<void> c = pool->allocate(3 * MiB);  // the first is taken: a new mapping
  EXPECT_NE(c.get(), first);
  EXPECT_EQ(pool->mapped_bytes(), 2 * size_class(3 * MiB));
  std::shared_ptr<void> d = pool->allocate(1);  // small requests get the smallest class
  EXPECT_EQ(pool->mapped_bytes(), 2 * size_class(3 * MiB) + size_class(HostPool::kMinBytes));
}

TEST(HostPool, UnmapsABufferIdleForTheDecay) {
  auto pool = HostPool::create(50ms);
  const auto start = std::chrono::steady_clock::now();
  pool->allocate(8 * MiB).reset();  // a burst's buffer
  std::shared_ptr<void> held = pool->allocate(MiB);
  EXPECT_TRUE(eventually([&] { return pool->idle_bytes() == 0; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(pool->mapped_bytes(), size_class(MiB));  // the one in use stays
  std::memset(held.get(), 7, MiB);
  held.reset();
  EXPECT_TRUE(eventually([&] { return pool->mapped_bytes() == 0; }));
}

TEST(HostPool, KeepsABufferTakenAgainWithinTheDecay) {
  auto pool = HostPool::create(400ms);
  void* first = nullptr;
  for (int step = 0; step < 10; ++step) {  // a buffer every 50 ms: never idle for the decay
    std::shared_ptr<void> a = pool->allocate(2 * MiB);
    if (step == 0) first = a.get();
    EXPECT_EQ(a.get(), first) << step;
    a.reset();
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(pool->mapped_bytes(), size_class(2 * MiB));
}

TEST(HostPool, OutlivesItsLastOwnerWhileABufferIsInUse) {
  auto pool = HostPool::create(10ms);
  std::shared_ptr<void> held = pool->allocate(2 * MiB);
  std::weak_ptr<HostPool> weak = pool;
  pool.reset();
  EXPECT_FALSE(weak.expired());  // the buffer's deleter keeps the pool
  std::memset(held.get(), 7, 2 * MiB);
  held.reset();
  EXPECT_TRUE(weak.expired());  // and the pool goes (its thread joined) with the buffer
}

}  // namespace
}  // namespace minivllm
