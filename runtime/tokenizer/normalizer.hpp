#pragma once
// The normalizers the supported tokenizer.json files use: none (Llama 3) or Unicode NFC
// (Qwen3), computed with utf8proc (Debian 12: 2.6, Unicode 13; compositions added to Unicode
// later are not applied).
#include <string>
#include <string_view>

namespace minivllm {

enum class Normalization { none, nfc };

// Unicode Normalization Form C of valid UTF-8 text.
std::string to_nfc(std::string_view text);

// `text` normalized as `form` says; `storage` holds the result when it differs from the input.
std::string_view normalize(Normalization form, std::string_view text, std::string& storage);

}  // namespace minivllm
