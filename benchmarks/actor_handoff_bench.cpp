// What one hand-off between threads costs on this machine, as the step loop makes them: mean
// round trip of a ping answered by a pong, one at a time, for
//   pooled <-> pooled actors (same CAF thread pool),
//   pooled -> detached actor (its own thread, CAF's mailbox wake-up),
//   detached <-> detached,
//   pooled actor -> JobThread -> back by anon_send (the worker's design: actors/job_thread.hpp),
// each with CAF's default scheduler settings and with set_low_latency_scheduling (the JobThread
// spins for its next job in both where cores are plenty: actors/usable_cores.hpp). Not run by the
// tests.   actor_handoff_bench [ROUND_TRIPS=5000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>

#include "actors/job_thread.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Answers each ping with its own value plus `offset` (0 here). The argument is there because
// CAF 0.17 spawns a function without arguments through a null pointer (UBSan reports it).
caf::behavior ponger(caf::event_based_actor*, std::int32_t offset) {
  return {[offset](std::int32_t x) { return x + offset; }};
}

// Sends `n` pings to `pong` one after another; answers `done` with the mean round trip in µs.
caf::behavior pinger(caf::event_based_actor* self, caf::actor pong, int n,
                     std::shared_ptr<std::promise<double>> done) {
  auto start = Clock::now();
  auto next = std::make_shared<std::function<void(int)>>();
  *next = [=](int i) {
    if (i == n) {
      done->set_value(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n);
      *next = nullptr;  // it holds itself
      self->quit();
      return;
    }
    self->request(pong, caf::infinite, i).then([=](std::int32_t) { (*next)(i + 1); });
  };
  (*next)(0);
  return {[](std::int32_t) {}};
}

template <caf::spawn_options PongOptions, caf::spawn_options PingOptions>
double actor_round_trip(caf::actor_system& sys, int n) {
  const caf::actor pong = sys.spawn<PongOptions>(ponger, std::int32_t{0});
  auto done = std::make_shared<std::promise<double>>();
  auto result = done->get_future();
  sys.spawn<PingOptions>(pinger, pong, n, done);
  const double us = result.get();
  caf::anon_send_exit(pong, caf::exit_reason::user_shutdown);
  return us;
}

// A pooled actor posts each ping to a JobThread, whose job sends the pong back with anon_send.
double job_thread_round_trip(caf::actor_system& sys, int n) {
  struct Nothing {};
  auto done = std::make_shared<std::promise<double>>();
  auto result = done->get_future();
  // n and done are spawn arguments, not captures (see ponger).
  sys.spawn([](caf::event_based_actor* self, int n,
               std::shared_ptr<std::promise<double>> done) -> caf::behavior {
    auto thread = std::make_shared<minivllm::JobThread<Nothing>>([] { return Nothing{}; });
    auto start = std::make_shared<Clock::time_point>(Clock::now());
    auto ping = [thread, to = caf::actor_cast<caf::actor>(self)](std::int32_t i) {
      thread->post([to, i](Nothing&) { caf::anon_send(to, i); });
    };
    ping(0);
    return {[=](std::int32_t i) {
      if (i + 1 < n) return ping(i + 1);
      done->set_value(std::chrono::duration<double, std::micro>(Clock::now() - *start).count() / n);
      self->quit();
    }};
  }, n, done);
  return result.get();
}

void measure(const char* settings, bool low_latency, int n) {
  caf::actor_system_config cfg;
  if (low_latency) minivllm::set_low_latency_scheduling(cfg);
  caf::actor_system sys{cfg};
  std::printf("%s\n", settings);
  std::printf("  pooled <-> pooled        %8.2f us\n",
              actor_round_trip<caf::no_spawn_options, caf::no_spawn_options>(sys, n));
  std::printf("  pooled -> detached       %8.2f us\n",
              actor_round_trip<caf::detached, caf::no_spawn_options>(sys, n));
  std::printf("  detached <-> detached    %8.2f us\n",
              actor_round_trip<caf::detached, caf::detached>(sys, n));
  std::printf("  pooled -> JobThread      %8.2f us\n", job_thread_round_trip(sys, n));
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  std::printf("mean round trip over %d pings, one at a time\n", n);
  measure("CAF default scheduler settings", false, n);
  measure("set_low_latency_scheduling", true, n);
}
