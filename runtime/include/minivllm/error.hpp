#pragma once
// The runtime's exception types. Error: bad input (config, checkpoint, tokenizer file, request)
// or a failed operation; its message names what is wrong and where; callers show it as is.
// DeviceLost: the device can run nothing more (a CUDA error that poisons its context, such as an
// illegal address in a kernel); only a new process can use it again.
#include <stdexcept>
#include <string>

namespace minivllm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceLost : public Error {
 public:
  using Error::Error;
};

}  // namespace minivllm
