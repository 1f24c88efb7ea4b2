#include "log/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <ctime>

namespace minivllm {
namespace {

std::atomic<LogLevel> g_level{LogLevel::info};
std::atomic<std::FILE*> g_stream{nullptr};  // null: stderr

}  // namespace

void set_log_level(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return level <= g_level.load(std::memory_order_relaxed); }

void set_log_stream(std::FILE* stream) { g_stream.store(stream); }

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "?";
}

std::string log_format(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

void log_line(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  static constexpr const char* kNames[] = {"ERROR", "WARN ", "INFO ", "DEBUG"};
  std::FILE* out = g_stream.load();
  // One call per line: stdio locks the stream for it, so lines of two threads never interleave.
  std::fprintf(out ? out : stderr, "minivllm %s %02d:%02d:%02d.%03d %.*s\n",
               kNames[static_cast<int>(level)], local.tm_hour, local.tm_min, local.tm_sec,
               static_cast<int>(millis), static_cast<int>(message.size()), message.data());
}

}  // namespace minivllm
