#pragma once
// A model's config.json as a plugin reads the fields its family adds to ModelConfig (rope scaling
// kinds, biases, windows). Every look-up checks the JSON type and throws minivllm::Error naming
// the file and the field; JSON null counts as absent.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/error.hpp>

namespace minivllm {

class ConfigFields {
 public:
  virtual ~ConfigFields() = default;

  // The file, or the file and the enclosing field ("<dir>/config.json rope_scaling").
  virtual const std::string& origin() const = 0;
  virtual bool has(std::string_view field) const = 0;
  // The field's JSON text, for messages ("" when absent).
  virtual std::string dump(std::string_view field) const = 0;

  // The field's value, or `fallback` when absent; an error when it has another type.
  virtual bool boolean(std::string_view field, bool fallback) const = 0;
  virtual std::int64_t integer(std::string_view field, std::int64_t fallback) const = 0;
  virtual double number(std::string_view field, double fallback) const = 0;  // int or float
  virtual std::string string(std::string_view field, std::string_view fallback) const = 0;
  // A list of strings; an integer or a list of integers (eos_token_id may be either). Empty
  // when absent.
  virtual std::vector<std::string> strings(std::string_view field) const = 0;
  virtual std::vector<std::int64_t> integers(std::string_view field) const = 0;
  // A nested object; null when absent, an error when not an object.
  virtual std::unique_ptr<ConfigFields> object(std::string_view field) const = 0;

  // Throws "<origin>: field '<field>': <what>".
  [[noreturn]] void fail(std::string_view field, const std::string& what) const {
    throw Error(origin() + ": field '" + std::string(field) + "': " + what);
  }
};

}  // namespace minivllm
