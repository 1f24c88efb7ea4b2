#include "engine/replica_router.hpp"

#include <xxhash.h>

#include <minivllm/error.hpp>

namespace minivllm {

ReplicaRouter::ReplicaRouter(std::size_t replicas, std::int32_t block_size,
                             std::size_t remembered_blocks)
    : replicas_(replicas), block_size_(block_size), remembered_blocks_(remembered_blocks) {
  if (replicas == 0 || block_size < 1)
    throw Error("ReplicaRouter: needs at least one replica and a block size of at least 1");
}

std::size_t ReplicaRouter::route(const std::string& request_id,
                                 std::span<const std::int32_t> prompt) {
  std::size_t chosen = 0;
  if (replicas_.size() > 1) {
    // The prompt's full blocks, chained as the block manager chains them.
    std::vector<std::uint64_t> hashes;
    std::uint64_t parent = 0;
    for (std::size_t b = 0; (b + 1) * static_cast<std::size_t>(block_size_) <= prompt.size(); ++b) {
      parent = XXH3_64bits_withSeed(prompt.data() + b * static_cast<std::size_t>(block_size_),
                                    sizeof(std::int32_t) * static_cast<std::size_t>(block_size_),
                                    parent);
      hashes.push_back(parent);
    }
    bool any_serving = false;
    for (const Replica& r : replicas_) any_serving = any_serving || r.serving;
    std::size_t best_blocks = 0;
    bool have = false;
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
      if (any_serving && !replicas_[r].serving) continue;
      std::size_t held = 0;
      while (held < hashes.size() && replicas_[r].blocks.count(hashes[held]) > 0) ++held;
      const bool longer = held > best_blocks;
      const bool as_long_less_loaded = held == best_blocks && replicas_[r].load < replicas_[chosen].load;
      if (!have || longer || as_long_less_loaded) {
        chosen = r;
        best_blocks = held;
        have = true;
      }
    }
    Replica& replica = replicas_[chosen];
    if (replica.blocks.size() + hashes.size() > remembered_blocks_) replica.blocks.clear();
    replica.blocks.insert(hashes.begin(), hashes.end());
  }
  if (running_.emplace(request_id, chosen).second) ++replicas_[chosen].load;
  return chosen;
}

void ReplicaRouter::ended(const std::string& request_id) {
  const auto it = running_.find(request_id);
  if (it == running_.end()) return;
  --replicas_[it->second].load;
  running_.erase(it);
}

std::size_t ReplicaRouter::replica_of(const std::string& request_id) const {
  const auto it = running_.find(request_id);
  return it == running_.end() ? replicas_.size() : it->second;
}

}  // namespace minivllm
