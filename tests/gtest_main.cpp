// main() for every test binary: GoogleTest's, except that a binary whose tests all skipped (a GPU
// test on a machine without a GPU) exits with 77, which meson reports as SKIP instead of OK.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->test_to_run_count() > 0 && unit->skipped_test_count() == unit->test_to_run_count())
    return 77;
  return rc;
}
