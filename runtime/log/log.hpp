#pragma once
// The runtime's one logger: a line per event on stderr, at or above the level the last runtime
// started with set (runtime.log_level; process-wide, as vLLM's logger is). Thread-safe.
//   info:  start-up (model, backend, KV cache, graph capture), then while busy every 5 s the
//          requests running and waiting, tokens/s, KV-cache use and the prefix-cache hit rate;
//   debug: every step;
//   warn:  preemptions and refused requests.
#include <cstdio>
#include <string>
#include <string_view>

#include <minivllm/log_level.hpp>

namespace minivllm {

void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
// Writes "minivllm LEVEL HH:MM:SS.mmm message" when `level` is enabled.
void log_line(LogLevel level, std::string_view message);
// Where lines go (stderr unless a test says otherwise); the caller keeps `stream` open.
void set_log_stream(std::FILE* stream);

std::string_view log_level_name(LogLevel level);

// printf into a string, for log lines.
std::string log_format(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace minivllm
