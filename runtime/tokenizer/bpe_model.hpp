#pragma once
// The BPE model of a byte-level tokenizer: a vocabulary and ranked merges, both keyed by raw
// bytes (the byte-level alphabet is undone at load), and a cache of word -> ids.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/token_id.hpp"

namespace minivllm {

class BpeModel {
 public:
  // Hashes std::string and std::string_view alike, so lookups by view need no copy.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Each token's raw bytes -> its id.
  using Vocab = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

  // `vocab` must hold all 256 single bytes. With `ignore_merges` a word found whole in the
  // vocabulary is one token (Llama 3).
  BpeModel(Vocab vocab, bool ignore_merges, std::size_t expected_merges);
  BpeModel(BpeModel&&) = delete;  // holds a mutex; owned through a pointer

  // Adds the next merge of the file's list. Throws minivllm::Error if a part or the merged
  // result is not in the vocabulary.
  void add_merge(std::string_view left, std::string_view right);

  // Appends the ids of one pre-tokenized word (raw bytes, not empty) to `out`.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  // Raw bytes of each vocabulary entry, indexed by id (empty for ids the model lacks).
  std::vector<std::string> bytes_by_id() const;

 private:
  struct Merge {
    std::uint32_t rank;
    TokenId merged;
  };
  using WordMap =
      std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>>;

  static std::uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
           static_cast<std::uint32_t>(right);
  }
  void merge_word(std::string_view word, std::vector<TokenId>& out) const;

  Vocab vocab_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::uint32_t merges_listed_ = 0;
  TokenId byte_ids_[256];
  bool ignore_merges_;

  // Words repeat a lot in real text; remembering their ids skips the merge loop. Bounded so a
  // long-running server does not grow without limit.
  static constexpr std::size_t kCacheCapacity = 1 << 17;
  static constexpr std::size_t kMaxCachedWordBytes = 64;
  mutable std::mutex cache_mutex_;
  mutable WordMap cache_;
};

}  // namespace minivllm
