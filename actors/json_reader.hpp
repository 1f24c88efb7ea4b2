#pragma once
// Reading JSON request objects field by field, with errors that name the field and what was
// expected: the generate-request lines (request_json.hpp) and the server's OpenAI bodies.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/chat.hpp>
#include <minivllm/error.hpp>

namespace minivllm {

// A field's value is wrong: "<where>: field '<field>': <what>".
struct FieldError : Error {
  FieldError(const std::string& where, const std::string& field, const std::string& what)
      : Error(where + ": field '" + field + "': " + what), field(field) {}
  std::string field;
};

// What a value is, for errors. Scalars are shown; containers only named, so that an error never
// copies (or recurses through) a large or deeply nested value.
std::string shown(const nlohmann::json& v);

class JsonReader {
 public:
  using json = nlohmann::json;
  explicit JsonReader(std::string_view where) : where_(where) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw FieldError(where_, field, what);
  }

  // An integer in [lo, hi]: JSON floats (1.0 too) and anything that would narrow are errors.
  template <class T>
  T integer(const std::string& field, const json& v, T lo = std::numeric_limits<T>::min(),
            T hi = std::numeric_limits<T>::max()) const {
    const std::string expected =
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got ";
    if (v.is_number_unsigned()) {
      const auto x = v.get<std::uint64_t>();
      if (x > static_cast<std::uint64_t>(hi)) fail(field, expected + shown(v));
      if constexpr (std::is_signed_v<T>)
        if (static_cast<std::int64_t>(x) < static_cast<std::int64_t>(lo)) fail(field, expected + shown(v));
      return static_cast<T>(x);
    }
    if (v.is_number_integer()) {  // negative: nlohmann keeps non-negative ones unsigned
      const auto x = v.get<std::int64_t>();
      if constexpr (std::is_unsigned_v<T>) fail(field, expected + shown(v));
      else if (x < static_cast<std::int64_t>(lo) || x > static_cast<std::int64_t>(hi))
        fail(field, expected + shown(v));
      return static_cast<T>(x);
    }
    fail(field, expected + shown(v));
  }

  double number(const std::string& field, const json& v) const;
  bool boolean(const std::string& field, const json& v) const;
  std::string string(const std::string& field, const json& v) const;
  std::vector<std::int32_t> token_ids(const std::string& field, const json& v) const;
  // A string or a list of strings (vLLM's stop).
  std::vector<std::string> strings(const std::string& field, const json& v) const;
  // Chat messages: {"role", "content"} with content a string or a list of text parts
  // ({"type": "text", "text": ...}), and Qwen3's "reasoning_content".
  std::vector<ChatMessage> messages(const std::string& field, const json& v) const;

 private:
  std::string where_;
};

}  // namespace minivllm
