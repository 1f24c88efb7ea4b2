// minivllm generate: runs prompts through the runtime's actors (via the synchronous facade) and
// prints each completion, or one JSON line per request with --json, or one prompt's text as it
// is generated with --stream.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>
#include <minivllm/llm.hpp>

#include "actors/request_json.hpp"
#include "cli/commands.hpp"
#include "cli/token_id_list.hpp"
#include "cli/config_options.hpp"

namespace minivllm::cli {
namespace {

struct GenerateOptions {
  ConfigOptions config;
  std::vector<std::string> prompts;
  std::string prompt_file;
  std::vector<std::string> prompt_ids;
  bool chat = false;
  bool json = false;
  bool stream = false;
  SamplingParams params;
  std::uint64_t seed = 0;
  int logprobs = 0;                // set when --logprobs is given
  std::string stop_token_ids;      // "1,2"
};

GenerateRequest text_request(const GenerateOptions& o, const std::string& text) {
  GenerateRequest r;
  if (o.chat) r.messages.push_back({"user", text, std::nullopt, {}});
  else r.prompt = text;
  r.params = o.params;
  return r;
}

// One request per line: a JSON string (a text prompt, as --prompt) or a request object
// (actors/request_json.hpp: its sampling fields override the command line's). Blank lines are
// skipped.
std::vector<GenerateRequest> read_prompt_file(const GenerateOptions& o) {
  const std::string& path = o.prompt_file;
  std::ifstream in(path);
  if (!in) throw Error("--prompt-file " + path + ": cannot open");
  std::vector<GenerateRequest> requests;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "--prompt-file " + path + " line " + std::to_string(number);
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": expected a JSON string or request object (" + e.what() + ")");
    }
    if (value.is_string()) requests.push_back(text_request(o, value.get<std::string>()));
    else if (value.is_object()) requests.push_back(generate_request_from_json(value, o.params, where));
    else throw Error(where + ": expected a JSON string or request object, got " + value.type_name());
  }
  return requests;
}

std::vector<GenerateRequest> requests_of(const GenerateOptions& o) {
  std::vector<GenerateRequest> requests;
  for (const std::string& p : o.prompts) requests.push_back(text_request(o, p));
  if (!o.prompt_file.empty())
    for (GenerateRequest& r : read_prompt_file(o)) requests.push_back(std::move(r));
  for (const std::string& ids : o.prompt_ids) {
    GenerateRequest& r = requests.emplace_back();
    r.prompt_token_ids = parse_token_id_list(ids, "--prompt-ids");
    r.params = o.params;
  }
  if (requests.empty()) throw Error("no prompts: give --prompt, --prompt-file or --prompt-ids");
  return requests;
}

// A one-line bar on stderr, redrawn in place.
void show_progress(std::size_t done, std::size_t total) {
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r[%s%s] %zu/%zu requests", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), done, total);
  if (done == total) std::fputc('\n', stderr);
}

// Per generated token: {"token_id", "logprob", "top": [[id, logprob], ...]}.
nlohmann::json json_of(const std::vector<PositionLogprobs>& logprobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const PositionLogprobs& p : logprobs) {
    nlohmann::json top = nlohmann::json::array();
    for (const Logprob& l : p.top) top.push_back({l.token, l.logprob});
    out.push_back({{"token_id", p.chosen.token}, {"logprob", p.chosen.logprob}, {"top", top}});
  }
  return out;
}

// Today's fields for the first completion; "logprobs" when asked; "outputs" (every completion)
// when there are several.
nlohmann::json json_of(const GenerateResult& r, bool logprobs) {
  if (!r.ok()) return {{"error", r.error}};
  const CompletionOutput& c = r.output.outputs.at(0);
  nlohmann::json line = {{"prompt_token_ids", r.output.prompt_token_ids},
                         {"token_ids", c.token_ids},
                         {"text", c.text},
                         {"finish_reason", finish_reason_name(c.finish_reason)},
                         {"num_cached_tokens", r.output.num_cached_tokens}};
  if (logprobs) line["logprobs"] = json_of(c.logprobs);
  if (r.output.outputs.size() > 1) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const CompletionOutput& o : r.output.outputs) {
      nlohmann::json one = {{"index", o.index},
                            {"token_ids", o.token_ids},
                            {"text", o.text},
                            {"finish_reason", finish_reason_name(o.finish_reason)}};
      if (logprobs) one["logprobs"] = json_of(o.logprobs);
      outputs.push_back(std::move(one));
    }
    line["outputs"] = std::move(outputs);
  }
  return line;
}

// --stream: the one request's text on stdout as it comes, then its summary on stderr.
void run_streamed(LLM& llm, std::vector<GenerateRequest> requests) {
  if (requests.size() != 1)
    throw Error("--stream prints one prompt as it is generated; " +
                std::to_string(requests.size()) + " were given");
  if (requests.front().params.n != 1) throw Error("--stream prints one completion: --n must be 1");
  const std::vector<GenerateResult> results =
      llm.generate(std::move(requests), {}, [](const RequestDelta& d) {
        std::fwrite(d.text.data(), 1, d.text.size(), stdout);
        std::fflush(stdout);
      });
  std::printf("\n");
  std::fflush(stdout);
  const GenerateResult& r = results.front();
  if (!r.ok()) {
    std::fprintf(stderr, "error: %s\n", r.error.c_str());
    throw CLI::RuntimeError(1);
  }
  const CompletionOutput& c = r.output.outputs.at(0);
  std::fprintf(stderr, "%zu tokens, finish_reason %s\n", c.token_ids.size(),
               finish_reason_name(c.finish_reason));
}

void run(GenerateOptions& o, bool seed_given, bool logprobs_given) {
  if (seed_given) o.params.seed = o.seed;
  if (logprobs_given) o.params.logprobs = o.logprobs;
  if (!o.stop_token_ids.empty())
    o.params.stop_token_ids = parse_token_id_list(o.stop_token_ids, "--stop-token-ids");
  std::vector<GenerateRequest> requests = requests_of(o);
  const std::size_t total = requests.size();
  LLM llm(o.config.load());
  if (o.stream) {
    run_streamed(llm, std::move(requests));
    return;
  }
  std::function<void(std::size_t)> progress;
  if (total > 1 && isatty(STDERR_FILENO)) progress = [total](std::size_t done) { show_progress(done, total); };
  const std::vector<GenerateResult> results = llm.generate(std::move(requests), progress);
  bool failed = false;
  for (std::size_t i = 0; i < results.size(); ++i) {
    failed = failed || !results[i].ok();
    if (o.json) {
      std::printf("%s\n", json_of(results[i], o.params.logprobs.has_value()).dump().c_str());
    } else if (results[i].ok()) {
      // Every completion: [request] alone, [request.completion] when there are several.
      const auto& outputs = results[i].output.outputs;
      for (const CompletionOutput& c : outputs) {
        const std::string label = outputs.size() == 1
                                      ? std::to_string(i)
                                      : std::to_string(i) + "." + std::to_string(c.index);
        std::printf("[%s] %s\n", label.c_str(), c.text.c_str());
        std::fprintf(stderr, "[%s] %zu tokens, finish_reason %s\n", label.c_str(),
                     c.token_ids.size(), finish_reason_name(c.finish_reason));
      }
    } else {
      std::fprintf(stderr, "[%zu] error: %s\n", i, results[i].error.c_str());
    }
  }
  std::fflush(stdout);
  if (failed) throw CLI::RuntimeError(1);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate completions for prompts");
  o->config.add_to(*cmd);
  cmd->add_option("--prompt", o->prompts, "Prompt text (repeatable)")->take_all()->expected(1);
  cmd->add_option("--prompt-file", o->prompt_file,
                  "File with one request per line: a JSON string prompt, or a JSON request object "
                  "({\"prompt\"|\"prompt_token_ids\"|\"messages\", sampling fields})");
  cmd->add_option("--prompt-ids", o->prompt_ids, "Prompt token ids, e.g. 1,2,3 (repeatable)")
      ->take_all()
      ->expected(1);
  cmd->add_flag("--chat", o->chat, "Wrap each text prompt as one user message in the model's chat format");
  cmd->add_option("--max-tokens", o->params.max_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", o->params.temperature, "0 = greedy [the model's generation_config, else 1]");
  cmd->add_option("--top-p", o->params.top_p, "Nucleus sampling mass in (0, 1] [generation_config, else 1]");
  cmd->add_option("--top-k", o->params.top_k, "0 or -1 = off [generation_config, else off]");
  cmd->add_option("--min-p", o->params.min_p, "Minimum probability relative to the top token, in [0, 1]")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", o->params.repetition_penalty,
                  "Penalty on prompt and output tokens (1 = off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", o->params.presence_penalty,
                  "Penalty on output tokens present so far, in [-2, 2]")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", o->params.frequency_penalty,
                  "Penalty per occurrence of an output token so far, in [-2, 2]")
      ->capture_default_str();
  cmd->add_option("--stop", o->params.stop, "Stop string (repeatable); left out of the text")
      ->take_all()
      ->expected(1);
  cmd->add_option("--stop-token-ids", o->stop_token_ids, "Token ids that stop generation, e.g. 50,51");
  CLI::Option* logprobs = cmd->add_option(
      "--logprobs", o->logprobs, "Log-probabilities of each generated token and its top N (--json prints them)");
  cmd->add_option("--n", o->params.n, "Completions per prompt (--json prints them all)")
      ->capture_default_str();
  cmd->add_option("--min-tokens", o->params.min_tokens, "Tokens before EOS or a stop may end it")
      ->capture_default_str();
  CLI::Option* seed = cmd->add_option("--seed", o->seed, "Per-request sampling seed");
  cmd->add_flag("--ignore-eos", o->params.ignore_eos, "Keep generating past EOS");
  CLI::Option* json = cmd->add_flag("--json", o->json, "One JSON line per request on stdout");
  logprobs->needs(json);  // only the JSON lines carry them
  cmd->add_flag("--stream", o->stream, "Print one prompt's text as it is generated")->excludes(json);
  cmd->callback([o, seed, logprobs] { run(*o, seed->count() > 0, logprobs->count() > 0); });
}

}  // namespace minivllm::cli
