// The step loop against a fake model whose output depends on every KV slot it reads (see
// fake_model_runner.hpp): greedy outputs must equal the reference whatever the batching.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <minivllm/error.hpp>

#include "backend/cpu_sampler.hpp"
#include "engine/llm_engine.hpp"
#include "fake_model_runner.hpp"

namespace minivllm {
namespace {

using testing::FakeModelRunner;
using testing::reference_greedy;

constexpr int kVocab = 64;
constexpr int kBlockSize = 16;
constexpr int kNewTokens = 32;

struct EngineSetup {
  int num_blocks = 512;
  bool prefix_caching = true;
  bool chunked = false;
  int budget = 2048;
  int max_num_seqs = 256;
  int max_model_len = 2048;
};

struct Fixture {
  explicit Fixture(const EngineSetup& s, TextStreams text = {})
      : runner(kVocab, s.num_blocks, kBlockSize),
        engine(EngineConfig{{s.max_num_seqs, s.budget, s.max_model_len, s.chunked},
                            {kBlockSize, s.num_blocks, s.prefix_caching},
                            {0},
                            1},
               runner, std::move(text)) {}

  // Runs every request to the end, checking the block pool after each step.
  std::map<std::string, RequestOutput> run() {
    std::map<std::string, RequestOutput> done;
    while (engine.has_unfinished_requests()) {
      for (RequestOutput& out : engine.step())
        if (out.finished) done[out.request_id] = std::move(out);
      EXPECT_EQ(engine.scheduler().check_invariants(), "");
    }
    EXPECT_EQ(engine.scheduler().block_manager().num_free_blocks(),
              engine.scheduler().block_manager().num_blocks());
    return done;
  }

  FakeModelRunner runner;
  LLMEngine engine;
};

SamplingParams greedy(int max_tokens = kNewTokens) {
  SamplingParams p;
  p.temperature = 0.0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

std::vector<std::int32_t> prompt_of(int length, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> p(length);
  for (auto& t : p) t = static_cast<std::int32_t>(rng() % kVocab);
  return p;
}

// 64 prompts of mixed lengths, some sharing long prefixes.
std::vector<std::vector<std::int32_t>> mixed_prompts() {
  std::vector<std::vector<std::int32_t>> prompts;
  const auto shared = prompt_of(40, 999);
  for (int i = 0; i < 64; ++i) {
    auto p = prompt_of(1 + (i * 37) % 150, i);
    if (i % 4 == 0) p.insert(p.begin(), shared.begin(), shared.end());
    prompts.push_back(std::move(p));
  }
  return prompts;
}

void expect_all_match_reference(const EngineSetup& setup, std::uint64_t* preemptions = nullptr) {
  Fixture f(setup);
  const auto prompts = mixed_prompts();
  for (std::size_t i = 0; i < prompts.size(); ++i)
    f.engine.add_request(std::to_string(i), prompts[i], greedy());
  const auto done = f.run();
  ASSERT_EQ(done.size(), prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const CompletionOutput& out = done.at(std::to_string(i)).outputs.at(0);
    EXPECT_EQ(out.token_ids, reference_greedy(prompts[i], kVocab, kNewTokens)) << "request " << i;
    EXPECT_EQ(out.finish_reason, FinishReason::length);
  }
  if (preemptions) *preemptions = f.engine.scheduler().num_preemptions();
}

TEST(LLMEngine, GreedyAloneMatchesReference) {
  for (int len : {1, 15, 16, 17, 100}) {
    Fixture f(EngineSetup{});
    const auto prompt = prompt_of(len, len);
    f.engine.add_request("a", prompt, greedy());
    const auto done = f.run();
    EXPECT_EQ(done.at("a").outputs.at(0).token_ids, reference_greedy(prompt, kVocab, kNewTokens));
  }
}

TEST(LLMEngine, SixtyFourMixedRequestsMatchWithPrefixCachingOnAndOff) {
  expect_all_match_reference(EngineSetup{.prefix_caching = true});
  expect_all_match_reference(EngineSetup{.prefix_caching = false});
}

TEST(LLMEngine, TinyCacheWithManyPreemptionsMatches) {
  std::uint64_t preemptions = 0;
  expect_all_match_reference(EngineSetup{.num_blocks = 24, .prefix_caching = false}, &preemptions);
  EXPECT_GT(preemptions, 20u);
  expect_all_match_reference(EngineSetup{.num_blocks = 24, .prefix_caching = true}, &preemptions);
  EXPECT_GT(preemptions, 20u);
}

TEST(LLMEngine, ChunkedPrefillAtSeveralChunkSizesMatches) {
  for (int chunk : {5, 16, 61, 256}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    expect_all_match_reference(EngineSetup{.chunked = true, .budget = chunk});
  }
  // Chunking and preemption together.
  expect_all_match_reference(EngineSetup{.num_blocks = 24, .chunked = true, .budget = 40});
}

TEST(LLMEngine, SharedPrefixIsComputedOnce) {
  Fixture f(EngineSetup{});
  const auto first = prompt_of(100, 1);
  f.engine.add_request("first", first, greedy(4));
  f.run();
  auto second = first;
  for (int t : {3, 1, 4, 1, 5}) second.push_back(t);
  const std::int64_t before = f.runner.tokens_computed();
  f.engine.add_request("second", second, greedy());
  const auto done = f.run();
  // first held 103 computed tokens: 6 full blocks (96 tokens) cached. second computes the other
  // 9 prompt tokens, then one token per decode step.
  EXPECT_EQ(f.runner.tokens_computed() - before, (105 - 96) + (kNewTokens - 1));
  EXPECT_EQ(done.at("second").num_cached_tokens, 96);
  EXPECT_EQ(done.at("second").outputs[0].token_ids, reference_greedy(second, kVocab, kNewTokens));
}

std::vector<std::int32_t> sample_alone_and_batched(const SamplingParams& p, bool batched) {
  Fixture f(EngineSetup{.num_blocks = batched ? 30 : 512});
  const auto prompt = prompt_of(30, 5);
  if (batched)
    for (int i = 0; i < 10; ++i) {
      SamplingParams other;
      other.max_tokens = 40;
      other.ignore_eos = true;
      f.engine.add_request("other" + std::to_string(i), prompt_of(20 + i, 50 + i), other);
    }
  f.engine.add_request("seeded", prompt, p);
  const auto out = f.run().at("seeded").outputs;
  std::vector<std::int32_t> tokens;
  for (const auto& c : out) tokens.insert(tokens.end(), c.token_ids.begin(), c.token_ids.end());
  if (batched) {
    EXPECT_GT(f.engine.scheduler().num_preemptions(), 0u);
  }
  return tokens;
}

TEST(LLMEngine, SeededSamplingIsReproducibleAndIndependentOfTheBatch) {
  SamplingParams p;
  p.seed = 1234;
  p.max_tokens = 24;
  p.ignore_eos = true;
  p.n = 2;
  const auto alone = sample_alone_and_batched(p, false);
  EXPECT_EQ(alone, sample_alone_and_batched(p, false));
  EXPECT_EQ(alone, sample_alone_and_batched(p, true));
  EXPECT_NE(alone, [&] {  // completion i uses seed + i: different streams
    auto v = alone;
    std::rotate(v.begin(), v.begin() + 24, v.end());
    return v;
  }());
  p.top_k = 1;  // top_k = 1 is greedy whatever the seed
  const auto top1 = sample_alone_and_batched(p, true);
  const auto ref = reference_greedy(prompt_of(30, 5), kVocab, 24);
  EXPECT_EQ(std::vector<std::int32_t>(top1.begin(), top1.begin() + 24), ref);
}

// The index of the first token of `ref` not seen before it (so stopping on it stops there).
std::size_t first_fresh_after(const std::vector<std::int32_t>& ref, std::size_t from) {
  for (std::size_t k = from; k < ref.size(); ++k)
    if (std::find(ref.begin(), ref.begin() + k, ref[k]) == ref.begin() + k) return k;
  return ref.size();
}

TEST(LLMEngine, StopTokenIdsAndEosStopAtTheRightToken) {
  const auto prompt = prompt_of(20, 8);
  const auto ref = reference_greedy(prompt, kVocab, kNewTokens);
  const std::size_t k = first_fresh_after(ref, 5);
  ASSERT_LT(k, ref.size());
  const std::vector<std::int32_t> upto(ref.begin(), ref.begin() + k + 1);
  {
    Fixture f(EngineSetup{});
    SamplingParams p = greedy();
    p.stop_token_ids = {ref[k]};
    f.engine.add_request("stop_id", prompt, p);
    const auto out = f.run().at("stop_id").outputs[0];
    EXPECT_EQ(out.token_ids, upto);
    EXPECT_EQ(out.finish_reason, FinishReason::stop);
    EXPECT_EQ(out.stop_token_id, ref[k]);
  }
  {
    Fixture f(EngineSetup{});
    SamplingParams p = greedy();
    p.ignore_eos = false;
    LLMEngine engine(EngineConfig{{256, 2048, 2048, false}, {kBlockSize, 512, true}, {ref[k]}, 1},
                     f.runner);
    engine.add_request("eos", prompt, p);
    p.ignore_eos = true;
    engine.add_request("ignore", prompt, p);
    std::map<std::string, RequestOutput> done;
    for (auto& out : engine.run_until_done()) done[out.request_id] = out;
    EXPECT_EQ(done.at("eos").outputs[0].token_ids, upto);
    EXPECT_EQ(done.at("eos").outputs[0].finish_reason, FinishReason::stop);
    EXPECT_FALSE(done.at("eos").outputs[0].stop_token_id);
    EXPECT_EQ(done.at("ignore").outputs[0].token_ids, ref);
  }
}

std::string bracketed(std::span<const std::int32_t> ids) {
  std::string s;
  for (std::int32_t id : ids) s += "<" + std::to_string(id) + ">";
  return s;
}

// Each token's text is its id in brackets.
struct BracketedText final : TextStream {
  std::string push(std::int32_t id) override { return "<" + std::to_string(id) + ">"; }
  std::string finish() override { return ""; }
};

TextStreams bracketed_text() {
  return [](bool) { return std::make_unique<BracketedText>(); };
}

TEST(LLMEngine, StopStringsStopAtTheRightTokenAndCutTheText) {
  const auto prompt = prompt_of(20, 9);
  const auto ref = reference_greedy(prompt, kVocab, kNewTokens);
  const std::size_t k = first_fresh_after(ref, 6);
  ASSERT_LT(k, ref.size());
  const std::vector<std::int32_t> upto(ref.begin(), ref.begin() + k + 1);
  const std::string before = bracketed(std::span(ref).first(k - 1));
  // Spans the end of token k-1 and token k.
  const std::string stop = ">" + bracketed(std::span(ref).subspan(k, 1));
  for (bool include : {false, true}) {
    Fixture f(EngineSetup{}, bracketed_text());
    SamplingParams p = greedy();
    p.stop = {"never", stop};
    p.include_stop_str_in_output = include;
    f.engine.add_request("s", prompt, p);
    const auto out = f.run().at("s").outputs[0];
    EXPECT_EQ(out.token_ids, upto);
    EXPECT_EQ(out.finish_reason, FinishReason::stop);
    EXPECT_EQ(out.stop_str, stop);
    const std::string last = "<" + std::to_string(ref[k - 1]);
    EXPECT_EQ(out.text, include ? before + last + stop : before + last);
  }
}

TEST(LLMEngine, DeltaOutputsAddUpToTheFinalAndFinalOnlyReportsOnce) {
  const auto prompt = prompt_of(20, 9);
  const auto ref = reference_greedy(prompt, kVocab, kNewTokens);
  const std::size_t k = first_fresh_after(ref, 10);
  ASSERT_LT(k, ref.size());
  Fixture f(EngineSetup{}, bracketed_text());
  SamplingParams p = greedy();
  p.stop = {">" + bracketed(std::span(ref).subspan(k, 1))};  // cuts token k-1's last char
  p.logprobs = 1;
  p.output_kind = OutputKind::delta;
  f.engine.add_request("delta", prompt, p);
  p.output_kind = OutputKind::final_only;
  f.engine.add_request("final", prompt, p);
  std::vector<std::int32_t> tokens;
  std::string text;
  std::size_t logprobs = 0;
  int outputs = 0;
  int final_outputs = 0;
  RequestOutput final_out;
  while (f.engine.has_unfinished_requests()) {
    for (RequestOutput& out : f.engine.step()) {
      if (out.request_id == "final") {
        ++final_outputs;
        EXPECT_TRUE(out.finished);
        final_out = out;
        continue;
      }
      EXPECT_EQ(out.prompt_token_ids.empty(), outputs++ > 0);  // the prompt comes once
      const CompletionOutput& c = out.outputs[0];
      tokens.insert(tokens.end(), c.token_ids.begin(), c.token_ids.end());
      text += c.text;
      logprobs += c.logprobs.size();
    }
  }
  EXPECT_EQ(final_outputs, 1);
  EXPECT_EQ(tokens, final_out.outputs[0].token_ids);
  EXPECT_EQ(text, final_out.outputs[0].text);
  const std::string upto_k = bracketed(std::span(ref).first(k));
  EXPECT_EQ(text, upto_k.substr(0, upto_k.size() - 1));
  EXPECT_EQ(logprobs, k + 1);
  EXPECT_EQ(outputs, static_cast<int>(k + 1));
}

TEST(LLMEngine, MaxModelLenAndMaxTokensEndWithLength) {
  Fixture f(EngineSetup{.max_model_len = 25});
  f.engine.add_request("capped", prompt_of(20, 1), greedy());
  f.engine.add_request("short", prompt_of(3, 2), greedy(4));
  const auto done = f.run();
  EXPECT_EQ(done.at("capped").outputs[0].token_ids.size(), 5u);
  EXPECT_EQ(done.at("capped").outputs[0].finish_reason, FinishReason::length);
  EXPECT_EQ(done.at("short").outputs[0].token_ids.size(), 4u);
}

TEST(LLMEngine, AbortFreesTheRequestsBlocks) {
  Fixture f(EngineSetup{});
  f.engine.add_request("a", prompt_of(40, 1), greedy());
  f.engine.add_request("b", prompt_of(40, 2), greedy());
  f.engine.step();
  f.engine.step();
  const int free_before = f.engine.scheduler().block_manager().num_free_blocks();
  EXPECT_TRUE(f.engine.abort_request("a"));
  EXPECT_FALSE(f.engine.abort_request("a"));
  EXPECT_EQ(f.engine.scheduler().block_manager().num_free_blocks(), free_before + 3);
  EXPECT_EQ(f.engine.scheduler().check_invariants(), "");
  const auto done = f.run();
  EXPECT_EQ(done.count("a"), 0u);
  EXPECT_EQ(done.at("b").outputs[0].token_ids,
            reference_greedy(prompt_of(40, 2), kVocab, kNewTokens));
}

TEST(LLMEngine, RejectsBadRequestsWithClearErrors) {
  Fixture f(EngineSetup{.num_blocks = 8, .max_model_len = 200});
  auto error_of = [&](const std::vector<std::int32_t>& prompt, const SamplingParams& p) {
    try {
      f.engine.add_request("x", prompt, p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(prompt_of(201, 1), greedy()).find("max_model_len=200"), std::string::npos);
  EXPECT_NE(error_of(prompt_of(100, 1), greedy(100)).find("KV cache blocks"), std::string::npos);
  EXPECT_NE(error_of({1, kVocab}, greedy()).find("outside [0, 64)"), std::string::npos);
  SamplingParams bad = greedy();
  bad.top_p = 0;
  EXPECT_NE(error_of({1}, bad).find("top_p"), std::string::npos);
  bad = greedy();
  bad.stop = {"x"};
  EXPECT_NE(error_of({1}, bad).find("tokenizer"), std::string::npos);
  EXPECT_EQ(error_of({1}, greedy()), "");
  EXPECT_NE(error_of({1}, greedy()).find("already"), std::string::npos);
  EXPECT_EQ(f.engine.scheduler().num_waiting(), 1u);
}

TEST(LLMEngine, ReportsLogprobsAndPromptLogprobs) {
  const auto prompt = prompt_of(37, 4);
  for (bool chunked : {false, true}) {
    Fixture f(EngineSetup{.chunked = chunked, .budget = chunked ? 10 : 2048});
    f.engine.add_request("warm", prompt, greedy(2));  // puts the prompt in the prefix cache
    f.run();
    SamplingParams p = greedy(3);
    p.logprobs = 2;
    p.prompt_logprobs = 3;
    f.engine.add_request("lp", prompt, p);
    const auto out = f.run().at("lp");
    ASSERT_EQ(out.prompt_logprobs.size(), prompt.size());
    EXPECT_FALSE(out.prompt_logprobs[0]);
    std::vector<float> logits(kVocab);
    for (std::size_t i = 1; i < prompt.size(); ++i) {
      testing::fake_logits(std::span(prompt).first(i), logits);
      const auto expected = position_logprobs(logits, prompt[i], 3);
      ASSERT_TRUE(out.prompt_logprobs[i]);
      EXPECT_EQ(out.prompt_logprobs[i]->chosen.token, prompt[i]);
      EXPECT_EQ(out.prompt_logprobs[i]->chosen.rank, expected.chosen.rank);
      EXPECT_FLOAT_EQ(out.prompt_logprobs[i]->chosen.logprob, expected.chosen.logprob);
      ASSERT_EQ(out.prompt_logprobs[i]->top.size(), 3u);
      EXPECT_EQ(out.prompt_logprobs[i]->top[0].token, expected.top[0].token);
    }
    const auto& c = out.outputs[0];
    ASSERT_EQ(c.logprobs.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(c.logprobs[i].chosen.token, c.token_ids[i]);
      EXPECT_EQ(c.logprobs[i].chosen.rank, 1);  // greedy
      EXPECT_EQ(c.logprobs[i].top.size(), 2u);
    }
    EXPECT_EQ(c.token_ids, reference_greedy(prompt, kVocab, 3));
  }
}

}  // namespace
}  // namespace minivllm
