#pragma once
// A byte-level BPE tokenizer read from a model folder's tokenizer.json and
// tokenizer_config.json, reproducing Hugging Face `tokenizers` byte for byte:
//   encode: added tokens matched in the raw text -> normalizer on the text between them ->
//           Split pre-tokenizer regex -> BPE per piece (bytes) -> post-processor ids;
//   decode: bytes of each token -> UTF-8 with U+FFFD for ill-formed sequences.
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_vocabulary.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/token_id.hpp"

namespace minivllm {

class BpeModel;
class SplitPattern;

// Everything tokenizer.json and tokenizer_config.json say that minivllm uses; filled by
// tokenizer_file.cpp, which rejects any feature not implemented here.
struct TokenizerSpec {
  Normalization normalization = Normalization::none;
  std::vector<std::string> split_patterns;  // Oniguruma syntax, applied in turn ("Isolated")
  std::shared_ptr<BpeModel> model;  // shared: a spec may be destroyed where BpeModel is incomplete
  std::vector<AddedToken> added_tokens;
  // The post-processor for a single sequence: ids around the text's ids when
  // add_special_tokens is on (both empty for Qwen3 and Llama 3: no BOS).
  std::vector<TokenId> prefix_ids, suffix_ids;
  // From tokenizer_config.json.
  std::optional<std::string> bos_token, eos_token;
  std::string chat_template;
};

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json and DIR/tokenizer_config.json (see read_tokenizer_spec); throws
  // minivllm::Error naming the folder and the problem.
  static Tokenizer from_directory(const std::filesystem::path& dir);
  explicit Tokenizer(TokenizerSpec spec);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text`. Throws minivllm::Error if the text is empty (a request needs at least
  // one token and neither supported tokenizer adds any on its own; HF would return []) or not
  // valid UTF-8 (the message gives the byte offset). Special tokens written in the text are
  // recognised either way; add_special_tokens=false only turns the post-processor off.
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;

  // Text of `ids`; ill-formed UTF-8 shows as U+FFFD. Throws minivllm::Error for an id outside
  // the vocabulary, naming the id and its position.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // The raw bytes a token stands for (may be part of a UTF-8 character). Throws for an
  // unknown id, as decode does.
  std::string_view token_bytes(TokenId id) const;
  bool is_special(TokenId id) const;
  std::size_t vocab_size() const { return bytes_by_id_.size(); }

  const std::optional<std::string>& bos_token() const { return spec_.bos_token; }
  const std::optional<std::string>& eos_token() const { return spec_.eos_token; }
  // The added token whose text is `content` (e.g. the eos_token), if any.
  std::optional<TokenId> added_token_id(std::string_view content) const;
  const std::string& chat_template() const { return spec_.chat_template; }

 private:
  static constexpr std::size_t kNoPosition = static_cast<std::size_t>(-1);
  void check_id(TokenId id, std::size_t position) const;  // position in the ids, or kNoPosition
  void encode_plain(std::string_view text, std::vector<TokenId>& out) const;

  TokenizerSpec spec_;
  AddedVocabulary added_;
  std::vector<SplitPattern> splitters_;
  std::vector<std::string> bytes_by_id_;
  std::vector<char> known_;    // by id: the vocabulary or an added token has this id
  std::vector<char> special_;  // by id: a special added token
};

}  // namespace minivllm
