#pragma once
// GPT-2's byte-level alphabet (HF's ByteLevel pre-tokenizer and decoder): each byte 0..255 is
// shown as one printable Unicode character, so vocabulary entries are strings of those
// characters. minivllm keys its vocabulary by the raw bytes instead and converts only at load.
#include <optional>
#include <string>
#include <string_view>

namespace minivllm::byte_level {

// The character that stands for `byte` (e.g. 0x20 -> U+0120 'Ġ').
char32_t char_of_byte(unsigned char byte);

// The raw bytes a byte-level token string stands for, or nullopt if it holds a character
// outside the alphabet (HF's decoder then keeps such a token's own UTF-8 bytes).
std::optional<std::string> bytes_of_token(std::string_view token);

}  // namespace minivllm::byte_level
