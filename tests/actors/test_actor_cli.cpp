// `minivllm generate --json` end to end (the launcher, the facade, the actors, the tiny models):
// greedy outputs equal the goldens alone and batched; bad input gives a clear error
// per request, a non-zero exit code, and the other requests still complete.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actor_test_support.hpp"
#include "temp_dir.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

struct CliRun {
  int exit_code = -1;
  std::string out;          // stdout
  std::vector<json> lines;  // generate: stdout, one JSON value per line
  std::string err;          // stderr
};

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class Cli : public ::testing::TestWithParam<std::string> {
 protected:
  // minivllm generate --json --config <model's config> --set <test paths> <args>
  CliRun generate(const std::vector<std::string>& args) {
    CliRun run = minivllm({"generate", "--json"}, args);
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) run.lines.push_back(json::parse(line));
    return run;
  }

  // minivllm <subcommand...> --config <model's config> --set <test paths> <args>
  CliRun minivllm(const std::vector<std::string>& subcommand, const std::vector<std::string>& args) {
    // Bounded, so that a launcher that hangs fails its test (exit 124) instead of meson's run.
    std::string command = "timeout 240 " + quoted(testing::minivllm_bin().string());
    for (const std::string& word : subcommand) command += " " + word;
    command += " --config " + quoted(testing::tiny_config_file(GetParam()).string());
    for (const std::string& s : testing::tiny_overrides(GetParam())) command += " --set " + quoted(s);
    for (const std::string& a : args) command += " " + quoted(a);
    command += " 2>" + quoted((dir_ / "stderr").string());
    CliRun run;
    FILE* out = popen(command.c_str(), "r");
    char buffer[65536];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) run.out.append(buffer, n);
    const int status = pclose(out);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(dir_ / "stderr");
    run.err.assign(std::istreambuf_iterator<char>(err), {});
    return run;
  }

  static std::string ids_arg(const std::vector<std::int32_t>& ids) {
    std::string s;
    for (std::int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
  }

  // Greedy, 32 tokens, EOS ignored, for goldens[picks[i]]; checks every line against its golden.
  void expect_goldens(const std::vector<std::string>& settings, const std::vector<std::size_t>& picks) {
    std::vector<std::string> args = {"--temperature", "0", "--max-tokens", "32", "--ignore-eos",
                                     "--set", "model.max_model_len=1024"};
    for (const std::string& s : settings) args.insert(args.end(), {"--set", s});
    for (std::size_t p : picks) args.insert(args.end(), {"--prompt-ids", ids_arg(goldens_[p].prompt)});
    const CliRun run = generate(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.lines.size(), picks.size());
    for (std::size_t i = 0; i < picks.size(); ++i) {
      const json& line = run.lines[i];
      const auto got = line.at("token_ids").get<std::vector<std::int32_t>>();
      EXPECT_EQ(line.at("prompt_token_ids").get<std::vector<std::int32_t>>(), goldens_[picks[i]].prompt);
      EXPECT_EQ(got.size(), 32u);
      EXPECT_EQ(testing::head(got, goldens_[picks[i]].expected.size()), goldens_[picks[i]].expected)
          << "line " << i;
      EXPECT_EQ(line.at("finish_reason"), "length");
      EXPECT_TRUE(line.at("text").is_string());
    }
  }

  void SetUp() override { goldens_ = testing::load_goldens(GetParam()); }

  testing::TempDir dir_{"actor_cli"};
  std::vector<testing::Golden> goldens_;
};

// The door, alone and batched. Preemption, chunked prefill and prefix caching off are the engine
// core's scenarios, pinned in-process by engine/golden_* and through the actors by actors/golden_*
// (the same core the launcher drives); repeating them here only repeated the engine's work.
TEST_P(Cli, GoldensAloneAndBatched) {
  std::vector<std::size_t> each;
  for (std::size_t i = 0; i < goldens_.size(); ++i) each.push_back(i);
  {
    SCOPED_TRACE("each alone (one sequence at a time)");
    expect_goldens({"scheduler.max_num_seqs=1"}, each);
  }
  {
    SCOPED_TRACE("64 mixed, prefix caching on");
    expect_goldens({"cache.enable_prefix_caching=true"}, testing::mixed_picks(64, goldens_.size()));
  }
}

TEST_P(Cli, BadPromptsFailAloneAndTheExitCodeSaysSo) {
  const CliRun run = generate({"--set", "model.max_model_len=64", "--max-tokens", "4", "--prompt", "",
                            "--prompt-ids", ids_arg(goldens_[0].prompt), "--prompt-ids",
                            ids_arg(std::vector<std::int32_t>(100, 11))});
  EXPECT_NE(run.exit_code, 0);
  ASSERT_EQ(run.lines.size(), 3u) << run.err;
  EXPECT_NE(run.lines[0].at("error").get<std::string>().find("empty"), std::string::npos) << run.lines[0];
  EXPECT_EQ(run.lines[1].at("token_ids").size(), 4u) << run.lines[1];
  EXPECT_NE(run.lines[2].at("error").get<std::string>().find("max_model_len"), std::string::npos)
      << run.lines[2];
}

TEST_P(Cli, BadSamplingParametersAreClearErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--max-tokens", "-1"}, "max_tokens"}, {{"--top-p", "0"}, "top_p"}, {{"--top-p", "1.5"}, "top_p"}};
  for (const auto& [flags, field] : cases) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), {"--prompt", "Hello", "--prompt-ids", "1,2,3"});
    const CliRun run = generate(args);
    EXPECT_NE(run.exit_code, 0);
    ASSERT_EQ(run.lines.size(), 2u) << run.err;
    for (const json& line : run.lines)
      EXPECT_NE(line.at("error").get<std::string>().find(field), std::string::npos) << line;
  }
}

// One sequence at a time: the second request finds the first's 6 full blocks of its prompt.
TEST_P(Cli, JsonLinesCarryThePrefixCacheHit) {
  const std::string prompt = ids_arg(std::vector<std::int32_t>(100, 11));
  const CliRun run = generate({"--set", "scheduler.max_num_seqs=1", "--max-tokens", "2",
                               "--prompt-ids", prompt, "--prompt-ids", prompt});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.lines.size(), 2u);
  EXPECT_EQ(run.lines[0].at("num_cached_tokens"), 0);
  EXPECT_EQ(run.lines[1].at("num_cached_tokens"), 96);
}

// runtime.log_level decides what reaches stderr: info says what started, error nothing.
TEST_P(Cli, TheLogLevelDecidesWhatIsLogged) {
  const CliRun info = generate({"--set", "runtime.log_level=info", "--max-tokens", "2", "--prompt", "Hi"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.err.find("minivllm INFO "), std::string::npos) << info.err;
  EXPECT_NE(info.err.find("ready: KV cache of 512 blocks x 16 tokens (8192 tokens)"),
            std::string::npos)
      << info.err;
  const CliRun quiet = generate({"--set", "runtime.log_level=error", "--max-tokens", "2", "--prompt", "Hi"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  const CliRun refused = generate({"--set", "runtime.log_level=warn", "--max-tokens", "-1", "--prompt", "Hi"});
  EXPECT_NE(refused.err.find("minivllm WARN "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("refused"), std::string::npos) << refused.err;

  // A cache of 16 blocks for 8 sequences of 4 blocks each: preemptions, warned of; debug shows
  // every step.
  std::vector<std::string> args = {"--set", "runtime.log_level=debug", "--set",
                                   "cache.num_blocks=16", "--set", "model.max_model_len=64",
                                   "--max-tokens", "20", "--ignore-eos"};
  for (int i = 0; i < 8; ++i)
    args.insert(args.end(), {"--prompt-ids", ids_arg(std::vector<std::int32_t>(40, 11 + i))});
  const CliRun busy = generate(args);
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  EXPECT_NE(busy.err.find("sequences preempted (the KV cache is full"), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find("minivllm DEBUG"), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find("step 1: "), std::string::npos) << busy.err;
}

TEST_P(Cli, AnUnknownSetKeyIsAClearError) {
  const CliRun run = generate({"--set", "scheduler.no_such_key=1", "--prompt", "Hello"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_TRUE(run.lines.empty());
  EXPECT_NE(run.err.find("no_such_key"), std::string::npos) << run.err;
}

TEST_P(Cli, SamplingFlagsReachTheEngine) {
  // --n and --logprobs: every completion, each token's logprobs with its top alternatives.
  CliRun run = generate({"--prompt", "Hello", "--temperature", "0.8", "--seed", "3", "--n", "2",
                         "--logprobs", "2", "--max-tokens", "5", "--ignore-eos"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.lines.size(), 1u);
  const json& line = run.lines[0];
  ASSERT_EQ(line.at("outputs").size(), 2u);
  for (const json& o : line.at("outputs")) {
    ASSERT_EQ(o.at("token_ids").size(), 5u);
    ASSERT_EQ(o.at("logprobs").size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(o["logprobs"][i].at("token_id"), o["token_ids"][i]);
      EXPECT_LE(o["logprobs"][i].at("logprob").get<double>(), 0.0);
      EXPECT_EQ(o["logprobs"][i].at("top").size(), 2u);
    }
  }
  EXPECT_EQ(line.at("token_ids"), line["outputs"][0].at("token_ids"));
  // Without --json every completion is printed; logprobs need --json.
  run = minivllm({"generate"}, {"--prompt", "Hello", "--n", "2", "--max-tokens", "3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("[0.0] "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[0.1] "), std::string::npos) << run.out;
  run = minivllm({"generate"}, {"--prompt", "Hello", "--logprobs", "2"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--logprobs requires --json"), std::string::npos) << run.err;

  // --stop-token-ids: greedy stops at the first occurrence of a token it would generate.
  const std::vector<std::string> greedy = {"--prompt", "Hello", "--temperature", "0",
                                           "--max-tokens", "8", "--ignore-eos"};
  run = generate(greedy);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto tokens = run.lines.at(0).at("token_ids").get<std::vector<std::int32_t>>();
  const std::string text = run.lines[0].at("text");
  std::size_t k = 1;
  while (k < tokens.size() &&
         std::find(tokens.begin(), tokens.begin() + k, tokens[k]) != tokens.begin() + k)
    ++k;
  ASSERT_LT(k, tokens.size());
  std::vector<std::string> args = greedy;
  args.insert(args.end(), {"--stop-token-ids", std::to_string(tokens[k])});
  run = generate(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.lines.at(0).at("token_ids"),
            json(std::vector<std::int32_t>(tokens.begin(), tokens.begin() + k + 1)));
  EXPECT_EQ(run.lines[0].at("finish_reason"), "stop");

  // --stream: the same text, as it is generated; one prompt only.
  run = minivllm({"generate", "--stream"}, greedy);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, text + "\n");
  EXPECT_NE(run.err.find("8 tokens, finish_reason length"), std::string::npos) << run.err;
  args = greedy;
  args.insert(args.end(), {"--prompt", "Two"});
  run = minivllm({"generate", "--stream"}, args);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--stream prints one prompt as it is generated; 2 were given"),
            std::string::npos) << run.err;
}

TEST_P(Cli, ChatWrapsThePromptInTheModelsFormat) {
  const CliRun plain = generate({"--max-tokens", "2", "--prompt", "Hi"});
  const CliRun chat = generate({"--max-tokens", "2", "--chat", "--prompt", "Hi"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_GT(chat.lines.at(0).at("prompt_token_ids").size(),
            plain.lines.at(0).at("prompt_token_ids").size() + 4);
}

TEST_P(Cli, PromptFileHoldsOneJsonStringPerLine) {
  std::ofstream(dir_ / "prompts.jsonl") << "\"Hello\"\n\n\"Line with \\\"quotes\\\" and \\n a newline\"\n";
  const CliRun run = generate({"--max-tokens", "3", "--prompt-file", (dir_ / "prompts.jsonl").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.lines.size(), 2u);
  EXPECT_LT(run.lines[0].at("prompt_token_ids").size(), run.lines[1].at("prompt_token_ids").size());
}

TEST_P(Cli, PromptFileLinesMayBeRequestObjectsWhoseFieldsOverrideTheFlags) {
  const json golden = {{"prompt_token_ids", goldens_[0].prompt}, {"temperature", 0},
                       {"max_tokens", 32}, {"ignore_eos", true}, {"request_id", "golden"}};
  std::ofstream(dir_ / "requests.jsonl")
      << "\"Hello\"\n"
      << R"({"prompt": "Hello", "max_tokens": 5, "ignore_eos": true, "stop": []})" << "\n\n"
      << golden.dump() << "\n"
      << R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})" << "\n";
  const CliRun run = generate({"--max-tokens", "3", "--ignore-eos", "--prompt", "Hi",
                               "--prompt-file", (dir_ / "requests.jsonl").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.lines.size(), 5u) << run.out;
  EXPECT_EQ(run.lines[1].at("token_ids").size(), 3u) << run.lines[1];  // a string line: the flags
  EXPECT_EQ(run.lines[2].at("token_ids").size(), 5u) << run.lines[2];  // the object's max_tokens
  const auto got = run.lines[3].at("token_ids").get<std::vector<std::int32_t>>();
  EXPECT_EQ(testing::head(got, goldens_[0].expected.size()), goldens_[0].expected);
  // messages: rendered in the model's chat format, longer than the bare prompt "Hi".
  EXPECT_GT(run.lines[4].at("prompt_token_ids").size(), run.lines[0].at("prompt_token_ids").size() + 4);
  EXPECT_LE(run.lines[4].at("token_ids").size(), 2u);

  // A field that is unknown, of the wrong type or out of its type's range stops the run before it
  // starts, naming the line and the field.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"prompt": "x", "temprature": 0})", "line 2: field 'temprature': unknown"},
      {R"({"prompt": "x", "max_tokens": 4294967297})", "line 2: field 'max_tokens': expected an integer in"},
      {R"({"prompt": "x", "top_p": "high"})", "line 2: field 'top_p': expected a number"},
      {R"({"prompt": "x", "top_p": 1.5})", "line 2: SamplingParams.top_p must be in (0, 1]"},
      {R"({"max_tokens": 3})", "line 2: a request needs exactly one of"},
      {"[1, 2]", "line 2: expected a JSON string or request object, got array"},
  };
  for (const auto& [line, expected] : bad) {
    std::ofstream(dir_ / "bad.jsonl") << "\"ok\"\n" << line << "\n";
    const CliRun failed = generate({"--prompt-file", (dir_ / "bad.jsonl").string()});
    EXPECT_NE(failed.exit_code, 0) << line;
    EXPECT_TRUE(failed.lines.empty()) << line;
    EXPECT_NE(failed.err.find(expected), std::string::npos) << line << " -> " << failed.err;
  }
}

TEST_P(Cli, BenchThroughputRunsAWorkloadAndWritesItsResult) {
  const json workload = {{"name", "tiny"}, {"temperature", 1.0}, {"ignore_eos", true},
                         {"requests", {{{"prompt_token_ids", {1, 2, 3}}, {"max_tokens", 5}},
                                       {{"prompt_token_ids", {4, 5}}, {"max_tokens", 7}}}}};
  std::ofstream(dir_ / "workload.json") << workload.dump();
  const CliRun run = minivllm({"bench", "throughput"}, {"--workload", (dir_ / "workload.json").string(),
                                                        "--output", (dir_ / "result.json").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(dir_ / "result.json");
  const json result = json::parse(in);
  EXPECT_EQ(result.at("num_requests"), 2);
  EXPECT_EQ(result.at("prompt_tokens"), 5);
  EXPECT_EQ(result.at("output_tokens"), 12);
  EXPECT_GT(result.at("output_tokens_per_s").get<double>(), 0.0);
  EXPECT_NE(result.at("config").get<std::string>().find("[scheduler]"), std::string::npos);
  EXPECT_EQ(result.at("device"), "cpu");
  // Step times: the 2 requests' 5 and 7 tokens take 7 steps when they share every step, up to
  // 12 when they share none (on a loaded machine the second may arrive steps late: 9 was seen).
  EXPECT_NE(run.out.find("where the time went"), std::string::npos) << run.out;
  const json& times = result.at("step_times");
  std::uint64_t steps = 0;
  for (const json& b : times.at("buckets")) steps += b.at("steps").get<std::uint64_t>();
  EXPECT_GE(steps, 7u);
  EXPECT_LE(steps, 12u);
  EXPECT_GT(times.at("run_seconds").get<double>(), 0.0);
}

TEST_P(Cli, BenchLatencyStreamsEachLevelAndWritesPercentiles) {
  const CliRun run = minivllm({"bench", "latency"},
                              {"--concurrency", "1,3", "--prompt-len", "12", "--max-tokens", "5",
                               "--num-requests", "4", "--output", (dir_ / "latency.json").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("TTFT"), std::string::npos) << run.out;
  std::ifstream in(dir_ / "latency.json");
  const json result = json::parse(in);
  EXPECT_EQ(result.at("bench"), "latency");
  EXPECT_EQ(result.at("device"), "cpu");
  EXPECT_TRUE(result.at("date").is_string());
  EXPECT_TRUE(result.at("commit").is_string());
  EXPECT_NE(result.at("config").get<std::string>().find("[scheduler]"), std::string::npos);
  const json& settings = result.at("settings");
  EXPECT_EQ(settings.at("concurrency"), json({1, 3}));
  EXPECT_EQ(settings.at("prompt_len"), 12);
  EXPECT_EQ(settings.at("max_tokens"), 5);
  EXPECT_EQ(settings.at("num_requests"), 4);
  EXPECT_EQ(settings.at("ignore_eos"), true);
  const json& levels = result.at("levels");
  ASSERT_EQ(levels.size(), 2u);
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const json& level = levels[i];
    SCOPED_TRACE(level.dump());
    EXPECT_EQ(level.at("concurrency"), i == 0 ? 1 : 3);
    EXPECT_EQ(level.at("num_requests"), 4);
    EXPECT_EQ(level.at("output_tokens"), 4 * 5);  // EOS ignored: every request runs to max_tokens
    EXPECT_GT(level.at("output_tokens_per_s").get<double>(), 0.0);
    for (const char* metric : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
      const json& m = level.at(metric);
      EXPECT_GT(m.at("p50").get<double>(), 0.0) << metric;
      EXPECT_LE(m.at("p50").get<double>(), m.at("p90").get<double>()) << metric;
      EXPECT_LE(m.at("p90").get<double>(), m.at("p99").get<double>()) << metric;
      EXPECT_GT(m.at("mean").get<double>(), 0.0) << metric;
    }
    EXPECT_EQ(level.at("ttft_ms").at("count"), 4);
    EXPECT_EQ(level.at("itl_ms").at("count"), 4 * 4);  // four gaps between five tokens
    // A request's first token comes before its last.
    EXPECT_LT(level.at("ttft_ms").at("p50").get<double>(), level.at("e2e_ms").at("p99").get<double>());
  }
  // The engine's step times over the run: every prompt token of the warm-up and the 8 requests
  // computed in steps with a prompt (which may carry other requests' decode rows too).
  EXPECT_NE(run.out.find("where the time went"), std::string::npos) << run.out;
  std::uint64_t prefill_tokens = 0, steps = 0;
  for (const json& b : result.at("step_times").at("buckets")) {
    steps += b.at("steps").get<std::uint64_t>();
    if (b.at("kind") == "prefill") prefill_tokens += b.at("tokens").get<std::uint64_t>();
  }
  EXPECT_GE(prefill_tokens, 9u * 12u);
  EXPECT_GE(steps, 8u);
}

TEST_P(Cli, BenchLatencyRefusesBadLevels) {
  const CliRun run = minivllm({"bench", "latency"}, {"--concurrency", "2,0", "--output",
                                                     (dir_ / "latency.json").string()});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--concurrency"), std::string::npos) << run.err;
}

// A failed request once left the actor system waiting for a shutdown nobody sent: no output,
// no exit.
TEST_P(Cli, BenchLatencyReportsAFailedRequestAndExits) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--prompt-len", "2000", "--set", "model.max_model_len=1024"}, "max_model_len"},
      {{"--temperature", "-1"}, "temperature"},
  };
  for (const auto& [flags, field] : cases) {
    std::vector<std::string> args = {"--concurrency", "1", "--num-requests", "1", "--max-tokens",
                                     "4", "--output", (dir_ / "latency.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliRun run = minivllm({"bench", "latency"}, args);
    EXPECT_EQ(run.exit_code, 1) << flags[0] << ": " << run.err;
    EXPECT_NE(run.err.find("a request failed"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(field), std::string::npos) << run.err;
  }
}

TEST_P(Cli, LimitsOfTheModelAndTheMachineAreClearErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.max_model_len=1000000", "is above the model's max_position_embeddings"},
      {"cache.num_blocks=2000000000", "cache.num_blocks = 2000000000 needs"},
      {"parallel.tensor_parallel_size=3", "tensor parallel size 3 does not divide the 4 attention heads"},
  };
  for (const auto& [set, message] : cases) {
    const CliRun run = generate({"--set", set, "--max-tokens", "2", "--prompt", "Hello"});
    EXPECT_EQ(run.exit_code, 1) << set;
    EXPECT_TRUE(run.lines.empty()) << set;
    EXPECT_NE(run.err.find(message), std::string::npos) << set << ": " << run.err;
  }
}

// info runs generate's checks: a folder it accepts, generate loads.
TEST_P(Cli, InfoRefusesTheModelFoldersGenerateRefuses) {
  const auto model = testing::user_data_dir() / "models" / GetParam();
  const CliRun good = minivllm({"info"}, {});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("# checkpoint:"), std::string::npos) << good.out;

  using Edit = std::function<void(const std::filesystem::path&)>;
  auto edit_config = [](std::function<void(json&)> change) -> Edit {
    return [change](const std::filesystem::path& dir) {
      json config = json::parse(std::ifstream(dir / "config.json"));
      change(config);
      std::ofstream(dir / "config.json") << config.dump();
    };
  };
  const std::vector<std::tuple<std::string, Edit, std::string>> cases = {
      {"unsupported architecture",
       edit_config([](json& c) { c["architectures"] = {"FooForCausalLM"}; }), "FooForCausalLM"},
      {"broken tokenizer",
       [](const std::filesystem::path& dir) { std::ofstream(dir / "tokenizer.json") << "{\"model\": 1"; },
       "tokenizer.json"},
      {"wrong tensor shape",
       edit_config([](json& c) { c["intermediate_size"] = c["intermediate_size"].get<int>() + 8; }),
       "shape"},
  };
  for (const auto& [name, edit, message] : cases) {
    testing::TempDir folder("bad_model");
    for (const auto& f : std::filesystem::directory_iterator(model))
      std::filesystem::copy(f.path(), folder / f.path().filename().string());
    edit(folder.path());
    const std::string path_set = "model.path=" + json(folder.path().string()).dump();
    const CliRun info = minivllm({"info"}, {"--set", path_set});
    EXPECT_EQ(info.exit_code, 1) << name << ": " << info.out;
    EXPECT_NE(info.err.find(message), std::string::npos) << name << ": " << info.err;
    const CliRun run = generate({"--set", path_set, "--max-tokens", "2", "--prompt", "Hi"});
    EXPECT_EQ(run.exit_code, 1) << name;
    EXPECT_NE(run.err.find(message), std::string::npos) << name << ": " << run.err;
  }
}

// generation_config.json fills what a request leaves unset (vLLM's rule); a flag wins; "none"
// ignores the file. Its eos_token_id replaces config.json's.
TEST_P(Cli, GenerationConfigSuppliesTheDefaultsAndInfoShowsThem) {
  const auto model = testing::user_data_dir() / "models" / GetParam();
  testing::TempDir folder("gen_config");
  for (const auto& f : std::filesystem::directory_iterator(model))
    std::filesystem::copy(f.path(), folder / f.path().filename().string());
  std::ofstream(folder / "generation_config.json")
      << R"({"temperature": 0.0, "top_k": 20, "top_p": 0.95, "eos_token_id": [7, 9]})";
  const std::string path_set = "model.path=" + json(folder.path().string()).dump();
  const std::vector<std::string> prompt = {"--set", path_set, "--max-tokens", "12", "--ignore-eos",
                                           "--seed", "3", "--prompt-ids", ids_arg(goldens_[0].prompt)};
  auto tokens = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = prompt;
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun run = generate(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.lines.empty() ? std::vector<std::int32_t>{}
                             : run.lines.at(0).at("token_ids").get<std::vector<std::int32_t>>();
  };
  const auto greedy = tokens({"--temperature", "0"});
  EXPECT_EQ(testing::head(greedy, goldens_[0].expected.size()),
            testing::head(goldens_[0].expected, greedy.size()));
  EXPECT_EQ(tokens({}), greedy);  // temperature 0 from the file
  const auto sampled = tokens({"--temperature", "1", "--top-k", "0", "--top-p", "1"});
  EXPECT_NE(sampled, greedy);
  EXPECT_EQ(tokens({"--set", "model.generation_config=\"none\""}), sampled);  // vLLM's defaults

  const CliRun info = minivllm({"info"}, {"--set", path_set});
  EXPECT_NE(info.out.find("# sampling defaults for unset request fields: temperature 0, top_p 0.95, "
                          "top_k 20 (generation_config.json); EOS ids: 7, 9"),
            std::string::npos) << info.out;
  std::ofstream(folder / "generation_config.json") << R"({"top_p": 1.5})";
  const CliRun bad = minivllm({"info"}, {"--set", path_set});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("generation_config.json: SamplingParams.top_p must be in (0, 1]"),
            std::string::npos) << bad.err;
}

INSTANTIATE_TEST_SUITE_P(Tiny, Cli, ::testing::Values("tiny-qwen3", "tiny-llama3"),
                         [](const auto& info) {
                           return info.param == "tiny-qwen3" ? std::string("Qwen3") : std::string("Llama3");
                         });

}  // namespace
}  // namespace minivllm
