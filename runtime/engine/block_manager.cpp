#include "engine/block_manager.hpp"

#include <algorithm>
#include <xxhash.h>

#include <minivllm/error.hpp>

namespace minivllm {

namespace {
constexpr std::uint64_t root_hash = 0;  // the "parent" of a sequence's first block
}

BlockManager::BlockManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size),
      prefix_caching_(enable_prefix_caching),
      cached_(prefix_caching_ ? static_cast<std::size_t>(std::max(num_blocks, 0)) : 0) {
  if (num_blocks < 1)
    throw Error("num_blocks must be at least 1, got " + std::to_string(num_blocks));
  if (block_size < 1)
    throw Error("block_size must be at least 1, got " + std::to_string(block_size));
  blocks_.resize(num_blocks);
  if (prefix_caching_) block_tokens_.resize(static_cast<std::size_t>(num_blocks) * block_size);
  for (std::int32_t b = 0; b < num_blocks; ++b) push_free_back(b);
}

std::uint64_t BlockManager::block_hash(Sequence& seq, int index) {
  while (static_cast<int>(seq.block_hashes.size()) <= index) {
    const auto i = seq.block_hashes.size();
    const std::uint64_t parent = i == 0 ? root_hash : seq.block_hashes.back();
    const std::int32_t* tokens = seq.token_ids().data() + i * block_size_;
    seq.block_hashes.push_back(
        XXH3_64bits_withSeed(tokens, sizeof(std::int32_t) * block_size_, parent));
  }
  return seq.block_hashes[index];
}

bool BlockManager::holds_tokens(std::int32_t block, std::span<const std::int32_t> tokens) const {
  return std::equal(tokens.begin(), tokens.end(),
                    block_tokens_.begin() + static_cast<std::ptrdiff_t>(block) * block_size_);
}

std::vector<std::int32_t> BlockManager::match_prefix(Sequence& seq) {
  std::vector<std::int32_t> matched;
  if (!prefix_caching_) return matched;
  const int max_blocks = (seq.num_tokens() - 1) / block_size_;
  std::uint64_t parent = root_hash;
  for (int i = 0; i < max_blocks; ++i) {
    const std::uint64_t h = block_hash(seq, i);
    const std::int32_t b = cached_.find(h);
    if (b < 0) break;
    if (blocks_[b].parent_hash != parent ||
        !holds_tokens(b, seq.token_ids().subspan(static_cast<std::size_t>(i) * block_size_,
                                                 block_size_)))
      break;  // a hash collision: not our tokens
    matched.push_back(b);
    parent = h;
  }
  return matched;
}

bool BlockManager::grow(Sequence& seq, int num_new_tokens, std::span<const std::int32_t> cached) {
  const int tokens = seq.num_computed_tokens + num_new_tokens;
  const int have = static_cast<int>(seq.block_ids.size() + cached.size());
  const int need = blocks_for(tokens, block_size_) - have;
  const auto cached_free = std::count_if(cached.begin(), cached.end(),
                                         [&](std::int32_t b) { return blocks_[b].ref_count == 0; });
  if (need > num_free_ - cached_free) return false;

  if (seq.block_ids.empty() && prefix_caching_) {
    queries_ += static_cast<std::uint64_t>(seq.num_tokens());
    hits_ += cached.size() * static_cast<std::uint64_t>(block_size_);
  }
  for (std::int32_t b : cached) {
    if (blocks_[b].ref_count++ == 0) unlink_free(b);
    seq.block_ids.push_back(b);
  }
  if (!cached.empty()) seq.num_registered_blocks = static_cast<int>(seq.block_ids.size());
  for (int i = 0; i < need; ++i) {
    const std::int32_t b = pop_free();
    blocks_[b].ref_count = 1;
    seq.block_ids.push_back(b);
  }
  return true;
}

void BlockManager::register_new_full_blocks(Sequence& seq) {
  const int full = std::min<int>(seq.num_computed_tokens / block_size_,
                                 static_cast<int>(seq.block_ids.size()));
  for (int i = seq.num_registered_blocks; i < full; ++i) {
    const std::uint64_t h = block_hash(seq, i);
    const std::int32_t b = seq.block_ids[i];
    Block& block = blocks_[b];
    if (block.hashed || !cached_.insert(h, b)) continue;  // already cached elsewhere
    block.hashed = true;
    block.hash = h;
    block.parent_hash = i == 0 ? root_hash : seq.block_hashes[i - 1];
    const auto tokens = seq.token_ids().subspan(static_cast<std::size_t>(i) * block_size_,
                                                block_size_);
    std::copy(tokens.begin(), tokens.end(),
              block_tokens_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_);
  }
  seq.num_registered_blocks = std::max(seq.num_registered_blocks, full);
}

void BlockManager::free(Sequence& seq) {
  // Tail blocks first, so a prefix shared by many outlives the tails that were its own.
  for (std::size_t i = seq.block_ids.size(); i-- > 0;) {
    const std::int32_t b = seq.block_ids[i];
    Block& block = blocks_[b];
    if (--block.ref_count > 0) continue;
    if (block.hashed) {
      push_free_back(b);
    } else {
      push_free_front(b);  // holds nothing reusable: hand it out before any cached block
    }
  }
  seq.block_ids.clear();
  seq.num_registered_blocks = 0;
}

std::int32_t BlockManager::pop_free() {
  const std::int32_t b = free_head_;
  unlink_free(b);
  Block& block = blocks_[b];
  if (block.hashed) {  // evict: the least recently released cached block
    cached_.erase(block.hash);
    block.hashed = false;
  }
  return b;
}

void BlockManager::push_free_back(std::int32_t b) {
  Block& block = blocks_[b];
  block.in_free_queue = true;
  block.prev = free_tail_;
  block.next = -1;
  (free_tail_ >= 0 ? blocks_[free_tail_].next : free_head_) = b;
  free_tail_ = b;
  ++num_free_;
}

void BlockManager::push_free_front(std::int32_t b) {
  Block& block = blocks_[b];
  block.in_free_queue = true;
  block.prev = -1;
  block.next = free_head_;
  (free_head_ >= 0 ? blocks_[free_head_].prev : free_tail_) = b;
  free_head_ = b;
  ++num_free_;
}

void BlockManager::unlink_free(std::int32_t b) {
  Block& block = blocks_[b];
  (block.prev >= 0 ? blocks_[block.prev].next : free_head_) = block.next;
  (block.next >= 0 ? blocks_[block.next].prev : free_tail_) = block.prev;
  block.prev = block.next = -1;
  block.in_free_queue = false;
  --num_free_;
}

std::string BlockManager::check_invariants(std::span<const Sequence* const> holders) const {
  const int n = num_blocks();
  std::vector<int> held(n, 0);
  for (const Sequence* seq : holders)
    for (std::int32_t b : seq->block_ids) {
      if (b < 0 || b >= n) return "sequence " + std::to_string(seq->id()) + " holds bad block";
      ++held[b];
    }
  int queued = 0;
  std::size_t num_hashed = 0;
  for (std::int32_t b = free_head_; b >= 0; b = blocks_[b].next) {
    if (++queued > n) return "free queue has a cycle";
    if (!blocks_[b].in_free_queue) return "block " + std::to_string(b) + " queued, not marked";
  }
  if (queued != num_free_) return "free queue length differs from the free count";
  for (int b = 0; b < n; ++b) {
    const Block& block = blocks_[b];
    const std::string name = "block " + std::to_string(b);
    if (block.ref_count != held[b])
      return name + " has ref_count " + std::to_string(block.ref_count) + " but " +
             std::to_string(held[b]) + " holders";
    if (block.in_free_queue == (block.ref_count > 0))
      return name + (block.in_free_queue ? " is both free and referenced"
                                         : " is unreferenced but not in the free queue");
    if (block.hashed) {
      ++num_hashed;
      if (cached_.find(block.hash) != b) return name + " is hashed but not indexed";
    }
  }
  // Each hashed block has its own entry: any entry more points at a stale block.
  if (cached_.size() != num_hashed) return "hash index points at a stale block";
  return "";
}


void BlockManager::forget_cached_blocks() {
  for (Block& b : blocks_)
    if (b.hashed && b.ref_count == 0) {
      cached_.erase(b.hash);
      b.hashed = false;
    }
}

}  // namespace minivllm
