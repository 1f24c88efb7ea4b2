#pragma once
// UTF-8 helpers shared by encoding (validation), decoding (Hugging Face's lossy replacement
// with U+FFFD) and streaming (holding back a character that is not complete yet).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace minivllm::utf8 {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the bytes there are not
// a complete well-formed character (overlong forms, surrogates and values past U+10FFFF are
// ill-formed, as in the Unicode standard).
std::size_t valid_sequence_length(std::string_view s, std::size_t i);

// Byte offset of the first ill-formed byte, or s.size() if all of s is valid UTF-8.
std::size_t first_invalid_byte(std::string_view s);

// Rust's String::from_utf8_lossy (what HF's ByteLevel decoder calls): each maximal ill-formed
// subpart becomes one U+FFFD.
std::string decode_lossy(std::string_view bytes);

// Length of the longest suffix of `bytes` that is a proper prefix of a well-formed character,
// i.e. bytes a later chunk may still complete (0..3).
std::size_t incomplete_suffix_length(std::string_view bytes);

// Appends the UTF-8 encoding of a Unicode scalar value.
void append_code_point(std::string& out, char32_t cp);

}  // namespace minivllm::utf8
