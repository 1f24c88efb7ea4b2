#pragma once
// The prefix cache's index: a full block's chained hash -> the block holding it. Open addressing
// with linear probing in one flat array sized for every block at once, so an insert allocates
// nothing and a lookup divides by nothing (std::unordered_map allocates a node per entry and
// takes a modulo per lookup). The hashes are XXH3 outputs: their low bits pick the slot as is.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace minivllm {

class BlockHashIndex {
 public:
  // Room for max_entries at a load of at most one half.
  explicit BlockHashIndex(std::size_t max_entries)
      : slots_(std::bit_ceil(2 * max_entries + 1)), mask_(slots_.size() - 1) {}

  std::size_t size() const { return size_; }

  // The block indexed under `hash`; -1 when none.
  std::int32_t find(std::uint64_t hash) const {
    for (std::size_t i = home(hash);; i = next(i)) {
      if (slots_[i].block < 0) return -1;
      if (slots_[i].hash == hash) return slots_[i].block;
    }
  }

  // Indexes `block` under `hash` unless a block already is; returns whether it did.
  bool insert(std::uint64_t hash, std::int32_t block) {
    std::size_t i = home(hash);
    for (; slots_[i].block >= 0; i = next(i))
      if (slots_[i].hash == hash) return false;
    slots_[i] = {hash, block};
    ++size_;
    return true;
  }

  // Removes `hash`, which is indexed. Shifts the entries probed past its slot back, so every
  // entry stays reachable from its home slot without tombstones.
  void erase(std::uint64_t hash) {
    std::size_t hole = home(hash);
    while (slots_[hole].hash != hash || slots_[hole].block < 0) hole = next(hole);
    for (std::size_t i = next(hole); slots_[i].block >= 0; i = next(i)) {
      // The entry at i may fill the hole when its home is not between the hole and i.
      if (distance(home(slots_[i].hash), i) >= distance(hole, i)) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = {};
    --size_;
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::int32_t block = -1;  // -1: empty
  };

  std::size_t home(std::uint64_t hash) const { return static_cast<std::size_t>(hash) & mask_; }
  std::size_t next(std::size_t i) const { return (i + 1) & mask_; }
  // Probe steps from slot a forward to slot b.
  std::size_t distance(std::size_t a, std::size_t b) const { return (b - a) & mask_; }

  std::vector<Slot> slots_;
  std::size_t mask_;
  std::size_t size_ = 0;
};

}  // namespace minivllm
