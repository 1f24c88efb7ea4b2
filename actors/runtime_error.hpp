#pragma once
// The runtime's errors as CAF errors: one category whose context carries the message text.
#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace minivllm {

constexpr caf::atom_value runtime_error_category = caf::atom("minivllm");

// Codes: the runtime failed (a worker, a step), it refused a request for what it asked, its
// device is lost (it can run nothing more), or a worker of a group is lost (the group runs
// nothing until a worker joins in its place).
enum class RuntimeErrorCode : std::uint8_t {
  failed = 1,
  refused = 2,
  device_lost = 3,
  worker_lost = 4
};

inline caf::error runtime_error(std::string text) {
  return caf::error(static_cast<std::uint8_t>(RuntimeErrorCode::failed), runtime_error_category,
                    caf::make_message(std::move(text)));
}

inline caf::error request_refused(std::string text) {
  return caf::error(static_cast<std::uint8_t>(RuntimeErrorCode::refused), runtime_error_category,
                    caf::make_message(std::move(text)));
}

inline caf::error device_lost_error(std::string text) {
  return caf::error(static_cast<std::uint8_t>(RuntimeErrorCode::device_lost),
                    runtime_error_category, caf::make_message(std::move(text)));
}

inline caf::error worker_lost_error(std::string text) {
  return caf::error(static_cast<std::uint8_t>(RuntimeErrorCode::worker_lost),
                    runtime_error_category, caf::make_message(std::move(text)));
}

}  // namespace minivllm
