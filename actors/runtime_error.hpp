#pragma once
// The runtime's errors as CAF errors: one category whose context carries the message text.
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace minivllm {

constexpr caf::atom_value runtime_error_category = caf::atom("minivllm");

inline caf::error runtime_error(std::string text) {
  return caf::error(1, runtime_error_category, caf::make_message(std::move(text)));
}

}  // namespace minivllm
