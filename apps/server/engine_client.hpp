#pragma once
// The server's way to the engine actor: callbacks in, CAF messages out, so that the HTTP side
// needs no actors of its own. Callbacks run on the actor system's threads, those of one request
// one at a time. A handle: copies talk to the same engine; the actor system must outlive them.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <minivllm/actors/runtime.hpp>

namespace minivllm::server {

// Why a request got no output: the engine refused what it asks (the client's error), or failed.
struct EngineFailure {
  bool refused = false;
  bool device_lost = false;  // the engine can run nothing more and has stopped
  bool worker_lost = false;  // a worker of the engine is lost: it serves again once one joins
  std::string message;

  // The HTTP status: 400 for the client's request, 503 while a worker is lost, else 500.
  int status() const { return refused ? 400 : worker_lost ? 503 : 500; }
};

struct RequestCallbacks {
  std::function<void(RequestDelta&)> delta;
  std::function<void(RequestOutput&)> done;   // after the last delta
  std::function<void(const EngineFailure&)> failed;
};

struct LostDevice;  // engine_client.cpp

class EngineClient {
 public:
  EngineClient(caf::actor_system& sys, engine_actor engine);

  // Queues `request`: its deltas as it advances, then its final output (or why it failed).
  void submit(GenerateRequest request, RequestCallbacks callbacks);
  void abort(const std::string& request_id);
  void stats(std::function<void(EngineStats&)> done, std::function<void(const EngineFailure&)> failed);
  void tokenize(GenerateRequest request, std::function<void(std::vector<std::int32_t>&)> done,
                std::function<void(const EngineFailure&)> failed);
  // Aborts every request (each is answered), then stops the runtime's actors.
  void shutdown();
  // Not empty once an answer said the device is lost (the engine stopped): why.
  std::string device_lost() const;

 private:
  caf::actor_system* sys_;
  engine_actor engine_;
  std::shared_ptr<LostDevice> lost_;  // shared by the copies, written on the callbacks' threads
};

}  // namespace minivllm::server
