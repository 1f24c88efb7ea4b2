#pragma once
// How much the runtime logs (runtime.log_level).
namespace minivllm {

enum class LogLevel { error, warn, info, debug };

}  // namespace minivllm
