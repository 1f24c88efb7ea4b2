#pragma once
// The engine's listener for `minivllm worker` processes (published by the runtime on
// parallel.listen). A worker asks for a nonce, proves the join token with its HMAC and gets a
// rank with what loading it takes (the configuration, the group's NCCL id or collectives hub);
// once loaded it hands over its worker actor. Until it proves the token it gets nothing but the
// nonce, and a wrong proof is refused and logged.
//
// The door hands the remote ranks to the runtime at start-up (wait_atom; an error naming the
// missing ranks after parallel.join_timeout_s), then watches them: a remote worker that dies
// or disconnects is reported to its replica's group (lost_atom), its rank opens again, and the
// next worker to join takes it (a GroupMember to the group).
#include <chrono>
#include <string>
#include <vector>

#include "actors/remote_messages.hpp"

namespace minivllm {

struct JoinDoorSpec {
  std::string token;        // parallel.join_token_file's secret
  std::string config_toml;  // the configuration as a worker's process sees it
  std::vector<std::int32_t> eos_token_ids;
  int ranks = 1;         // tensor-parallel ranks per replica
  int first_remote = 0;  // ranks [first_remote, ranks * replicas) are remote, replica by replica
  int total = 1;
  std::vector<std::string> nccl_ids;  // per replica: the group's ncclUniqueId bytes, or empty
  std::vector<caf::actor> hubs;       // per replica: the group's collectives hub, or null
  std::chrono::seconds join_timeout{120};
  std::string address;  // where workers connect, for messages (or sent once published)
};

join_door_actor spawn_join_door(caf::actor_system& sys, JoinDoorSpec spec);

// "worker rank R" or "worker rank R of replica M", as errors name ranks.
std::string rank_name(int replica, int rank, int replicas);

}  // namespace minivllm
