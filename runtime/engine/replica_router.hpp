#pragma once
// Which data-parallel replica takes a request, as SGLang's cache-aware router picks: the
// replica whose prefix cache most likely holds the longest prefix of its prompt, else the least
// loaded one (ties: the lowest index). "Most likely holds": the router remembers the chained
// hashes of the full prompt blocks it sent to each replica (as the block manager hashes them),
// up to a bound per replica past which it forgets that replica's and learns again; it does not
// ask the replicas, so a block they evicted still counts. Load: requests routed and not ended.
// A replica that is not serving (a worker of its group lost) takes nothing while another serves.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace minivllm {

class ReplicaRouter {
 public:
  // `remembered_blocks`: the full blocks remembered per replica (its KV cache's blocks is a
  // natural bound: the cache holds no more).
  ReplicaRouter(std::size_t replicas, std::int32_t block_size, std::size_t remembered_blocks);

  std::size_t replicas() const { return replicas_.size(); }
  // The replica for a new request, counted in its load until ended(request_id).
  std::size_t route(const std::string& request_id, std::span<const std::int32_t> prompt);
  // The request ended (answered, failed or refused); unknown ids are ignored.
  void ended(const std::string& request_id);
  // The replica a request was routed to, while it runs; replicas() when unknown.
  std::size_t replica_of(const std::string& request_id) const;
  std::size_t load(std::size_t replica) const { return replicas_.at(replica).load; }
  // Whether a replica takes new requests (all do at first). When none does, route() picks among
  // all as before, and the replica's scheduler answers why it cannot run the request.
  void set_serving(std::size_t replica, bool serving) { replicas_.at(replica).serving = serving; }

 private:
  struct Replica {
    std::unordered_set<std::uint64_t> blocks;  // chained hashes of prompt blocks sent there
    std::size_t load = 0;
    bool serving = true;
  };

  std::vector<Replica> replicas_;
  std::int32_t block_size_;
  std::size_t remembered_blocks_;
  std::unordered_map<std::string, std::size_t> running_;  // request id -> replica
};

}  // namespace minivllm
