#include "tokenizer/tokenizer.hpp"

#include <minivllm/error.hpp>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/split_pattern.hpp"
#include "tokenizer/utf8.hpp"

namespace minivllm {

Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)), added_(spec_.added_tokens) {
  if (!spec_.model) throw Error("tokenizer: no BPE model");
  for (const std::string& pattern : spec_.split_patterns) splitters_.emplace_back(pattern);
  bytes_by_id_ = spec_.model->bytes_by_id();
  known_.assign(bytes_by_id_.size(), 0);
  for (std::size_t id = 0; id < bytes_by_id_.size(); ++id) known_[id] = !bytes_by_id_[id].empty();
  for (const AddedToken& t : spec_.added_tokens) {
    const auto id = static_cast<std::size_t>(t.id);
    if (id >= bytes_by_id_.size()) {
      bytes_by_id_.resize(id + 1);
      known_.resize(id + 1, 0);
    }
    // HF's ByteLevel decoder maps an added token through the byte alphabet too, unless it holds
    // a character outside it; then the token's own UTF-8 is used.
    bytes_by_id_[id] = byte_level::bytes_of_token(t.content).value_or(t.content);
    known_[id] = 1;
  }
  special_.assign(bytes_by_id_.size(), 0);
  for (const AddedToken& t : spec_.added_tokens)
    special_[static_cast<std::size_t>(t.id)] = t.special;
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (text.empty()) throw Error("tokenizer: the text to encode is empty");
  if (const std::size_t bad = utf8::first_invalid_byte(text); bad != text.size())
    throw Error("tokenizer: the text to encode is not valid UTF-8 (byte " + std::to_string(bad) +
                " of " + std::to_string(text.size()) + ")");
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + spec_.prefix_ids.size() + spec_.suffix_ids.size());
  if (add_special_tokens) ids.insert(ids.end(), spec_.prefix_ids.begin(), spec_.prefix_ids.end());
  for (std::size_t at = 0; at < text.size();) {
    const AddedVocabulary::Match m = added_.find(text, at);
    if (m.begin > at) encode_plain(text.substr(at, m.begin - at), ids);
    if (m.begin == text.size()) break;
    ids.push_back(m.id);
    at = m.end;
  }
  if (add_special_tokens) ids.insert(ids.end(), spec_.suffix_ids.begin(), spec_.suffix_ids.end());
  return ids;
}

// Text between added tokens: normalize, split by each pattern in turn, BPE each piece.
void Tokenizer::encode_plain(std::string_view text, std::vector<TokenId>& out) const {
  std::string normalized_storage;
  const std::string_view normalized = normalize(spec_.normalization, text, normalized_storage);
  std::vector<std::string_view> pieces{normalized}, next;
  for (const SplitPattern& splitter : splitters_) {
    next.clear();
    for (const std::string_view piece : pieces) splitter.split(piece, next);
    pieces.swap(next);
  }
  for (const std::string_view piece : pieces) spec_.model->encode_word(piece, out);
}

void Tokenizer::check_id(TokenId id, std::size_t position) const {
  if (id >= 0 && static_cast<std::size_t>(id) < known_.size() &&
      known_[static_cast<std::size_t>(id)])
    return;
  const std::string where =
      position == kNoPosition ? "" : " at position " + std::to_string(position);
  throw Error("tokenizer: token id " + std::to_string(id) + where + " is outside the vocabulary (" +
              std::to_string(known_.size()) + " ids)");
}

std::string_view Tokenizer::token_bytes(TokenId id) const {
  check_id(id, kNoPosition);
  return bytes_by_id_[static_cast<std::size_t>(id)];
}

bool Tokenizer::is_special(TokenId id) const {
  check_id(id, kNoPosition);
  return special_[static_cast<std::size_t>(id)] != 0;
}

std::optional<TokenId> Tokenizer::added_token_id(std::string_view content) const {
  for (const AddedToken& t : spec_.added_tokens)
    if (t.content == content) return t.id;
  return std::nullopt;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    check_id(ids[i], i);
    const auto id = static_cast<std::size_t>(ids[i]);
    if (skip_special_tokens && special_[id]) continue;
    bytes += bytes_by_id_[id];
  }
  return utf8::decode_lossy(bytes);
}

}  // namespace minivllm
