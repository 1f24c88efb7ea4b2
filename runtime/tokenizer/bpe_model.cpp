#include "tokenizer/bpe_model.hpp"

#include <cstdio>
#include <queue>

#include <minivllm/error.hpp>

namespace minivllm {

BpeModel::BpeModel(Vocab vocab, bool ignore_merges, std::size_t expected_merges)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges) {
  merges_.reserve(expected_merges);
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(std::string(1, static_cast<char>(b)));
    if (it == vocab_.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      throw Error(std::string("tokenizer: the vocabulary lacks the single byte ") + hex +
                  ": not a byte-level BPE vocabulary");
    }
    byte_ids_[b] = it->second;
  }
}

void BpeModel::add_merge(std::string_view left, std::string_view right) {
  const std::string merged_bytes = std::string(left) + std::string(right);
  const auto id_of = [&](std::string_view bytes) {
    const auto it = vocab_.find(bytes);
    if (it == vocab_.end())
      throw Error("tokenizer: merge #" + std::to_string(merges_listed_) + " (" + std::string(left) +
                  " " + std::string(right) + "): '" + std::string(bytes) +
                  "' is not in the vocabulary");
    return it->second;
  };
  const TokenId l = id_of(left), r = id_of(right), merged = id_of(merged_bytes);
  // Rank = position in the list; a pair listed twice keeps its last rank, as in HF.
  merges_.insert_or_assign(pair_key(l, r), Merge{merges_listed_++, merged});
}

std::vector<std::string> BpeModel::bytes_by_id() const {
  std::vector<std::string> out;
  for (const auto& [bytes, id] : vocab_) {
    if (static_cast<std::size_t>(id) >= out.size()) out.resize(static_cast<std::size_t>(id) + 1);
    out[static_cast<std::size_t>(id)] = bytes;
  }
  return out;
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity)
      cache_.try_emplace(std::string(word), out.begin() + first, out.end());
  }
}

// Starts from single bytes and applies the lowest-ranked merge present, leftmost first, until
// none applies: HF's order. Symbols form a linked list; the queue holds candidate pairs and a
// popped pair is skipped if either side has changed since it was queued.
void BpeModel::merge_word(std::string_view word, std::vector<TokenId>& out) const {
  struct Symbol {
    TokenId id;
    int prev, next;  // -1 at the ends
  };
  struct Candidate {
    std::uint32_t rank;
    int left, right;
    TokenId left_id, right_id, merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  const int n = static_cast<int>(word.size());
  std::vector<Symbol> symbols(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    symbols[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int left) {
    if (left < 0) return;
    const int right = symbols[left].next;
    if (right < 0) return;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end())
      queue.push(
          {it->second.rank, left, right, symbols[left].id, symbols[right].id, it->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    if (left.next != c.right || left.id != c.left_id || symbols[c.right].id != c.right_id) continue;
    left.id = c.merged;
    left.next = symbols[c.right].next;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    symbols[c.right].id = -1;  // dead: no queued pair can match it again
    consider(left.prev);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace minivllm
