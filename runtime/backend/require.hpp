#pragma once
// The backends' shape and batch checks run for every op, some for every token or block of a step:
// a macro, so that the message (a built string) is only built when the check fails. Building it
// eagerly cost milliseconds per step on the host.
#include <string>

#include <minivllm/error.hpp>

// Throws minivllm::Error("<where>: <what>") when `ok` is false; `where` and `what` are evaluated
// only then.
#define MV_REQUIRE(ok, where, what)                                                    \
  do {                                                                                 \
    if (!(ok)) throw ::minivllm::Error(std::string(where) + ": " + std::string(what)); \
  } while (false)
