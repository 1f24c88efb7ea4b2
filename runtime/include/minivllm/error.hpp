#pragma once
// The one exception type the runtime throws for bad input (config, checkpoint, tokenizer file,
// request). Its message names what is wrong and where; callers show it as is.
#include <stdexcept>
#include <string>

namespace minivllm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace minivllm
