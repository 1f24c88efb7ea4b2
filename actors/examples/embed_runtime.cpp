// Embedding minivllm in a program's own CAF actor system: spawn the runtime, stream a request's
// deltas to an actor of our own, wait for the final output, shut the runtime down.
//
//   embed_runtime CONFIG.toml [section.key=value ...] [-- PROMPT]
#include <cstdio>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <minivllm/actors/runtime.hpp>
#include <minivllm/error.hpp>

namespace {

// Prints each delta to `out` as it arrives. The stream is a spawn argument: CAF 0.17 spawns a
// function without arguments through a null pointer (UBSan reports it in CAF's headers).
minivllm::delta_sink spawn_printer(caf::actor_system& sys, std::FILE* out) {
  return sys.spawn(
      [](minivllm::delta_sink::pointer, std::FILE* out) -> minivllm::delta_sink::behavior_type {
        return {[out](const minivllm::RequestDelta& d) {
          std::fputs(d.text.c_str(), out);
          std::fflush(out);
        }};
      },
      out);
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG.toml [section.key=value ...] [-- PROMPT]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> overrides;
  std::string prompt = "The quick brown fox";
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--" && i + 1 < argc) {
      prompt = argv[i + 1];
      break;
    }
    overrides.push_back(argv[i]);
  }

  caf::actor_system_config cfg;
  minivllm::add_runtime_types(cfg);
  minivllm::set_low_latency_scheduling(cfg);
  caf::actor_system sys{cfg};
  const minivllm::engine_actor engine =
      minivllm::spawn_runtime(sys, minivllm::load_config(argv[1], overrides));
  const minivllm::delta_sink printer = spawn_printer(sys, stdout);

  minivllm::GenerateRequest request;
  request.prompt = prompt;
  request.params.max_tokens = 24;
  request.params.seed = 1;
  int exit_code = 0;
  caf::scoped_actor self{sys};
  self->request(engine, caf::infinite, request, printer)
      .receive(
          [&](const minivllm::RequestOutput& out) {
            const minivllm::CompletionOutput& c = out.outputs.at(0);
            std::printf("\n[%s: %zu prompt tokens, %zu generated, finish_reason %s]\n",
                        out.request_id.c_str(), out.prompt_token_ids.size(), c.token_ids.size(),
                        minivllm::finish_reason_name(c.finish_reason));
            if (c.token_ids.empty()) exit_code = 1;
          },
          [&](const caf::error& err) {
            std::fprintf(stderr, "error: %s\n", minivllm::error_text(sys, err).c_str());
            exit_code = 1;
          });
  // The system waits for every actor when it ends: stop the runtime and our printer.
  self->send(engine, minivllm::shutdown_atom_v);
  self->send_exit(printer, caf::exit_reason::user_shutdown);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const minivllm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
