#pragma once
// Reading tokenizer.json and tokenizer_config.json into a TokenizerSpec. Only what byte-level
// BPE tokenizers (Qwen3, Llama 3 and their kin) use is accepted; anything else is rejected
// with a minivllm::Error naming the file and the field, never silently ignored.
#include <filesystem>
#include <string_view>

#include "tokenizer/tokenizer.hpp"

namespace minivllm {

// `where` names the source in error messages (usually the folder).
TokenizerSpec parse_tokenizer_spec(std::string_view tokenizer_json,
                                   std::string_view tokenizer_config_json, std::string_view where);

// DIR/tokenizer.json and, when present, DIR/tokenizer_config.json (without it there is no chat
// template and no BOS/EOS names).
TokenizerSpec read_tokenizer_spec(const std::filesystem::path& dir);

}  // namespace minivllm
