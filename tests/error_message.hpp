#pragma once
// The message of the minivllm::Error a call throws: tests check that errors name what is wrong.
#include <string>

#include <minivllm/error.hpp>

namespace minivllm::testing {

// e.what() of the minivllm::Error that f() throws, or "" when it throws none.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace minivllm::testing
