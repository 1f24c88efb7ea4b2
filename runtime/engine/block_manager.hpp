#pragma once
// The KV cache's block pool: fixed-size blocks with reference counts and a free queue, plus
// prefix caching over full blocks. A full block is known by a chained hash (XXH3-64 of its token
// ids, seeded with its parent block's hash) and checked token by token against collisions.
// Released blocks keep their hash and stay matchable until reused; the free queue hands out the
// least recently released first (unhashed blocks before any cached one).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/block_hash_index.hpp"
#include "engine/sequence.hpp"

namespace minivllm {

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, bool enable_prefix_caching);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  // Blocks an allocation can take now: unreferenced ones, cached or not.
  int num_free_blocks() const { return num_free_; }
  static int blocks_for(int num_tokens, int block_size) {
    return (num_tokens + block_size - 1) / block_size;
  }

  // For a sequence holding no blocks: the cached blocks that hold its leading tokens, at most
  // (num_tokens - 1) tokens' worth so the last token is recomputed and yields logits.
  std::vector<std::int32_t> match_prefix(Sequence& seq);

  // Grows seq's block table to hold num_computed_tokens + num_new_tokens tokens. A sequence
  // holding no blocks first takes `cached` (from match_prefix; the caller has counted those
  // tokens as computed). Returns false, changing nothing, when the pool is short.
  bool allocate(Sequence& seq, int num_new_tokens, std::span<const std::int32_t> cached = {}) {
    // Most decodes fit in the blocks they hold: say so without a call or a division.
    if (cached.empty() && !seq.block_ids.empty() &&
        seq.num_computed_tokens + num_new_tokens <=
            static_cast<int>(seq.block_ids.size()) * block_size_)
      return true;
    return grow(seq, num_new_tokens, cached);
  }

  // Offers seq's newly computed full blocks to the prefix cache (after their KV is written).
  void register_full_blocks(Sequence& seq) {
    // Most steps fill no block: say so without a call or a division.
    const int next = seq.num_registered_blocks;
    if (prefix_caching_ && next < static_cast<int>(seq.block_ids.size()) &&
        seq.num_computed_tokens >= (next + 1) * block_size_)
      register_new_full_blocks(seq);
  }

  // Drops seq's references; its cached blocks stay matchable until the pool reuses them.
  void free(Sequence& seq);

  // Makes every free block unmatchable: their KV is gone (a worker that joined in a lost one's
  // place starts with an empty cache). Blocks still held keep their hash.
  void forget_cached_blocks();

  // Prefix-cache counters, in tokens: looked up at admission, and found in the cache.
  std::uint64_t prefix_cache_queries() const { return queries_; }
  std::uint64_t prefix_cache_hits() const { return hits_; }

  // "" when consistent with `holders` (every sequence holding blocks); else what is wrong:
  // a block both free and referenced, reference counts unequal to holders, the free queue and
  // the hash index out of step.
  std::string check_invariants(std::span<const Sequence* const> holders) const;

 private:
  struct Block {
    int ref_count = 0;
    bool in_free_queue = false;
    bool hashed = false;
    std::int32_t prev = -1;  // free-queue links
    std::int32_t next = -1;
    std::uint64_t hash = 0;
    std::uint64_t parent_hash = 0;
  };

  bool grow(Sequence& seq, int num_new_tokens, std::span<const std::int32_t> cached);
  void register_new_full_blocks(Sequence& seq);
  std::uint64_t block_hash(Sequence& seq, int index);
  bool holds_tokens(std::int32_t block, std::span<const std::int32_t> tokens) const;
  std::int32_t pop_free();
  void push_free_back(std::int32_t b);
  void push_free_front(std::int32_t b);
  void unlink_free(std::int32_t b);

  int block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  std::vector<std::int32_t> block_tokens_;  // token ids of hashed blocks, block_size per block
  BlockHashIndex cached_;  // hash -> block
  std::int32_t free_head_ = -1;
  std::int32_t free_tail_ = -1;
  int num_free_ = 0;
  std::uint64_t queries_ = 0;
  std::uint64_t hits_ = 0;
};

}  // namespace minivllm
