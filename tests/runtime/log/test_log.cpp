#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "log/log.hpp"

namespace minivllm {
namespace {

// Everything logged while it lives, read back.
class CapturedLog {
 public:
  CapturedLog() : file_(std::tmpfile()) { set_log_stream(file_); }
  ~CapturedLog() {
    set_log_stream(nullptr);
    std::fclose(file_);
  }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file_)) > 0;) out.append(buffer, n);
    return out;
  }

 private:
  std::FILE* file_;
};

TEST(Log, WritesTheLevelsAtOrAboveTheOneSet) {
  const CapturedLog log;
  set_log_level(LogLevel::warn);
  log_line(LogLevel::error, "an error");
  log_line(LogLevel::warn, "a warning");
  log_line(LogLevel::info, "some news");
  log_line(LogLevel::debug, "a detail");
  set_log_level(LogLevel::info);
  const std::string text = log.text();
  EXPECT_NE(text.find("minivllm ERROR "), std::string::npos) << text;
  EXPECT_NE(text.find("an error\n"), std::string::npos) << text;
  EXPECT_NE(text.find("minivllm WARN  "), std::string::npos) << text;
  EXPECT_EQ(text.find("some news"), std::string::npos) << text;
  EXPECT_EQ(text.find("a detail"), std::string::npos) << text;
}

TEST(Log, DebugIncludesEverything) {
  const CapturedLog log;
  set_log_level(LogLevel::debug);
  EXPECT_TRUE(log_enabled(LogLevel::debug));
  log_line(LogLevel::debug, log_format("step %d of %s", 3, "many"));
  set_log_level(LogLevel::info);
  EXPECT_FALSE(log_enabled(LogLevel::debug));
  EXPECT_NE(log.text().find("DEBUG"), std::string::npos);
  EXPECT_NE(log.text().find("step 3 of many"), std::string::npos);
}

}  // namespace
}  // namespace minivllm
