#include "tokenizer/normalizer.hpp"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include <minivllm/error.hpp>

namespace minivllm {

std::string to_nfc(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) throw Error(std::string("tokenizer: NFC normalization failed: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

std::string_view normalize(Normalization form, std::string_view text, std::string& storage) {
  if (form == Normalization::none) return text;
  // ASCII is already in NFC, and most text is mostly ASCII: skip utf8proc when we can.
  bool ascii = true;
  for (const char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return text;
  storage = to_nfc(text);
  return storage;
}

}  // namespace minivllm
