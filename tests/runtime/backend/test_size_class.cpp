// The pools' size classes (backend/size_class.hpp): pure arithmetic, no GPU.
#include <cstddef>
#include <set>

#include <gtest/gtest.h>

#include "backend/size_class.hpp"

namespace minivllm {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

TEST(SizeClass, CoversTheRequestWithLittleWaste) {
  EXPECT_EQ(size_class(0), 512u);
  EXPECT_EQ(size_class(512), 512u);
  EXPECT_EQ(size_class(513), 1024u);
  for (std::size_t bytes = 1; bytes < 256 * MiB; bytes = bytes * 17 / 16 + 1) {
    const std::size_t size = size_class(bytes);
    ASSERT_GE(size, bytes);
    ASSERT_EQ(size % 512, 0u) << bytes;
    if (bytes > 4096) {
      ASSERT_LE(size, bytes + bytes / 8) << bytes;
    }
    if (bytes > 64 * MiB) {
      ASSERT_LT(size - bytes, 2 * MiB) << bytes;
    }
  }
}

TEST(SizeClass, EightClassesPerPowerOfTwoBelow64MiB) {
  // Token counts 1..8192 of a 1024-wide bf16 activation: a few dozen sizes, not 8192.
  std::set<std::size_t> classes;
  for (std::size_t tokens = 1; tokens <= 8192; ++tokens) classes.insert(size_class(tokens * 2048));
  EXPECT_LE(classes.size(), 8u * 14);
  EXPECT_EQ(size_class(3 * MiB), 3 * MiB);
  EXPECT_EQ(size_class(3 * MiB + 1), 3 * MiB + 256 * 1024);
}

}  // namespace
}  // namespace minivllm
